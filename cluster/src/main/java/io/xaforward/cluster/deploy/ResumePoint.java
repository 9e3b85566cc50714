package io.xaforward.cluster.deploy;

import io.xaforward.collective.Collectives;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Set;

/**
 * Where a restarted job continues: the newest checkpoint step that every rank has. A rank killed while the others
 * were writing step N's checkpoint may lack it, so each rank contributes a 0/1 vector over the checkpoint steps
 * (1 = "I have it") to one all-reduce; the newest step whose sum equals the world size wins (step 0, a fresh start,
 * is always common). The steps a rank has are those of its files in its checkpoint directory
 * ({@link io.xaforward.cluster.CheckpointNames#rankSteps}).
 */
public final class ResumePoint {
    /** The all-reduce step number of the agreement, far from the training steps 0, 1, 2, ... */
    static final int AGREEMENT_STEP = 0x7FFF_0000;

    private ResumePoint() {}

    /**
     * Agrees with every rank on the newest common checkpoint step (0 when there is none). Also the job's start-up
     * rendezvous on the wire: it returns once every rank took part. Slot 0 of the vector is "I am here", slot i
     * "I have the checkpoint of step i * every".
     */
    public static long agree(Collectives collectives, Set<Long> have, long every, long steps) {
        int slots = 1 + (every > 0 ? (int) (steps / every) : 0);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment v = arena.allocate((long) slots * Float.BYTES, 64);
            v.setAtIndex(ValueLayout.JAVA_FLOAT, 0, 1f);
            for (int i = 1; i < slots; i++) {
                v.setAtIndex(ValueLayout.JAVA_FLOAT, i, have.contains(i * every) ? 1f : 0f);
            }
            collectives.allReduce(v, slots, Collectives.Op.SUM, AGREEMENT_STEP);
            int world = collectives.group().worldSize();
            if (v.getAtIndex(ValueLayout.JAVA_FLOAT, 0) != world) {
                throw new IllegalStateException("start-up agreement counted " + v.getAtIndex(ValueLayout.JAVA_FLOAT, 0)
                        + " ranks, expected " + world);
            }
            for (int i = slots - 1; i >= 1; i--) {
                if (v.getAtIndex(ValueLayout.JAVA_FLOAT, i) == world) return i * every;
            }
            return 0;
        }
    }
}
