package io.xaforward.cluster;

import io.xaforward.collective.Algorithm;
import io.xaforward.collective.CollectiveGroup;
import io.xaforward.collective.Collectives;
import io.xaforward.collective.OuterDtype;
import io.xaforward.training.GradientReducer;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The reducers a training rank hands its trainer, by {@link SyncMode}: under ddp the job's all-rank all-reduce;
 * under diloco an all-reduce among the ranks of this rank's data center (a sub-group in step space
 * {@link #INNER_SPACE}: it never crosses a gateway) and DiLoCo's outer all-reduce over all ranks (step space
 * {@link #OUTER_SPACE}), which runs at the same time as the inner one on the same transport.
 *
 * <p>The outer all-reduce is the hierarchical one over all ranks, each rank's pseudo-gradient first scaled by
 * 1 / (data centers x ranks of its data center) and then summed: every rank of a data center holds the same
 * pseudo-gradient, so the sum is the mean over data centers (whatever their sizes), bitwise the same on every rank.
 * Why this and not one leader per data center plus a broadcast inside it: across the WAN the hierarchical
 * algorithm sends each data center's partial sum of every value once to every other data center (the exchange
 * step), the least any all-reduce can send between two data centers, and the same bytes as a leader ring for two;
 * it spreads them over all ranks of the data center (parallel flows through the gateway instead of one host's
 * link); and it needs no separate broadcast. With more than two data centers a ring among leaders would send
 * 2(D-1)/D instead of D-1 copies per data center; the shipped topologies have two.
 */
public final class SyncGroups implements AutoCloseable {
    static final int INNER_SPACE = 1;
    static final int OUTER_SPACE = 2;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT;

    private final Collectives inner;
    private final Collectives outer;
    private final GradientReducer innerReducer;
    private final GradientReducer outerReducer;
    private final int datacenters;
    private final double bytesPerValue;
    private int outerSteps;

    public SyncGroups(SyncMode mode, OuterDtype outerDtype, Collectives all) {
        CollectiveGroup group = all.group();
        this.datacenters = group.datacenterCount();
        if (mode == SyncMode.DDP) {
            inner = null;
            outer = null;
            innerReducer = all::allReduceMean;
            outerReducer = null;
            bytesPerValue = 0;
            return;
        }
        TrainJobSpec.checkDatacenters(mode, datacenters);
        Collectives dc = all.datacenterGroup(INNER_SPACE, all.config());
        Collectives across;
        try {
            across = all.withStepSpace(OUTER_SPACE, all.config().withAlgorithm(Algorithm.HIERARCHICAL)
                    .withWireDtype(outerDtype.wireDtype()));
        } catch (RuntimeException e) {
            dc.close();
            throw e;
        }
        inner = dc;
        outer = across;
        innerReducer = dc::allReduceMean;
        float scale = 1f / ((float) datacenters * dc.group().worldSize());
        outerReducer = (segment, count) -> {
            for (long i = 0; i < count; i++) segment.setAtIndex(F32, i, segment.getAtIndex(F32, i) * scale);
            int step;
            synchronized (this) {
                step = outerSteps++;
            }
            across.allReduce(segment, count, Collectives.Op.SUM, step);
        };
        bytesPerValue = outerDtype.bytesPerValue();
    }

    /** Averages gradients every step: over all ranks (ddp) or over this data center's (diloco). */
    public GradientReducer inner() {
        return innerReducer;
    }

    /** DiLoCo's mean over data centers; null under ddp. */
    public GradientReducer outer() {
        return outerReducer;
    }

    /**
     * Payload bytes an outer all-reduce of {@code floats} values sends between data centers, all of them together:
     * every data center's partial sum of every value to every other data center (headers not counted).
     */
    public long outerWanBytes(long floats) {
        return (long) ((double) datacenters * (datacenters - 1) * floats * bytesPerValue);
    }

    @Override
    public void close() {
        if (inner != null) inner.close();
        if (outer != null) outer.close();
    }
}
