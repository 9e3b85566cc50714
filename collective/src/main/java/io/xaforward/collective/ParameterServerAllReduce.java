package io.xaforward.collective;

import io.xaforward.transport.ChunkSink;
import io.xaforward.transport.MessageId;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static io.xaforward.collective.Wire.F32;

/**
 * Parameter-server all-reduce for one element count (built once per count, reused across steps).
 *
 * <p>Each bucket has one server per data center: member {@code b mod m} of the DC (m = DC size), so the server
 * load of a large tensor is spread over all ranks of a DC. Per bucket:
 * <ol>
 *   <li>push: every other member of the DC sends its bucket to the DC's server;</li>
 *   <li>the server sums its DC's buckets in rank order, sends that DC sum to the servers of the other DCs, and adds
 *   the DC sums in data-center order (all servers thus compute bitwise the same total);</li>
 *   <li>pull: the server sends the total to the members of its DC, which copy it over their input.</li>
 * </ol>
 * Only servers talk across data centers: one bucket crosses each inter-DC link once per direction, like the
 * hierarchical ring, but the server's links carry m-1 buckets each way inside the DC.
 */
public final class ParameterServerAllReduce extends AllReducePlan {
    private static final int SLOT_PUSH = 0;
    private static final int SLOT_CROSS = 1;
    private static final int SLOT_PULL = 2;
    private static final int SLOTS = 3;

    private final int rank;
    private final int jobId;
    private final int[][] groups;
    private final int myGroup;
    private final int count;
    private final int bucketFloats;
    private final int buckets;
    /** Per served bucket: m-1 member buckets, then the DC sum, then D-1 other DC sums (each bucket-sized). */
    private final MemorySegment staging;
    private final long[] stagingStart;
    private final int[] pushesRemaining;
    private final int[] sumsRemaining;

    ParameterServerAllReduce(int rank, int[][] groups, int jobId, int count, int bucketFloats, Arena arena) {
        this.rank = rank;
        this.jobId = jobId;
        this.groups = groups;
        int g = -1;
        for (int d = 0; d < groups.length; d++) {
            for (int member : groups[d]) {
                if (member == rank) {
                    g = d;
                }
            }
        }
        if (g < 0) {
            throw new IllegalArgumentException("rank " + rank + " is in no data center");
        }
        this.myGroup = g;
        this.count = count;
        this.bucketFloats = bucketFloats;
        this.buckets = count == 0 ? 0 : (int) (((long) count + bucketFloats - 1) / bucketFloats);
        this.stagingStart = new long[buckets + 1];
        int slotsPerServedBucket = groups[g].length + groups.length - 1;
        for (int b = 0; b < buckets; b++) {
            long size = server(myGroup, b) == rank ? (long) slotsPerServedBucket * bucketLength(b) : 0;
            stagingStart[b + 1] = stagingStart[b] + size;
        }
        this.staging = stagingStart[buckets] == 0 ? MemorySegment.NULL
                : arena.allocate(stagingStart[buckets] * Float.BYTES, 64);
        this.pushesRemaining = new int[buckets];
        this.sumsRemaining = new int[buckets];
    }

    @Override
    long stagingBytes() {
        return staging.byteSize();
    }

    /** The rank that serves bucket {@code b} for data center {@code dc}. */
    int server(int dc, int b) {
        int[] members = groups[dc];
        return members[b % members.length];
    }

    private int bucketLength(int b) {
        return (int) Math.min(bucketFloats, (long) count - (long) b * bucketFloats);
    }

    @Override
    void start(Operation op, MemorySegment data, int step) {
        for (int b = 0; b < buckets; b++) {
            int myServer = server(myGroup, b);
            MemorySegment bucket = Wire.floats(data, (long) b * bucketFloats, bucketLength(b));
            if (myServer != rank) {
                op.expect(myServer, id(step, b, SLOT_PULL), bucket, ChunkSink.COPY, null);
            } else {
                postServerExpects(op, data, step, b);
            }
        }
        for (int b = 0; b < buckets; b++) {
            int myServer = server(myGroup, b);
            if (myServer != rank) {
                op.send(myServer, id(step, b, SLOT_PUSH), Wire.floats(data, (long) b * bucketFloats,
                        bucketLength(b)), null);
            } else if (pushesRemaining[b] == 0) {
                reduceDatacenter(op, data, step, b);
            }
        }
    }

    private void postServerExpects(Operation op, MemorySegment data, int step, int b) {
        int[] members = groups[myGroup];
        pushesRemaining[b] = members.length - 1;
        sumsRemaining[b] = groups.length; // the other DCs' sums plus our own
        int slot = 0;
        for (int member : members) {
            if (member != rank) {
                op.expect(member, id(step, b, SLOT_PUSH), stagingBucket(b, slot++), ChunkSink.COPY, () -> {
                    if (--pushesRemaining[b] == 0) {
                        reduceDatacenter(op, data, step, b);
                    }
                });
            }
        }
        int other = 0;
        for (int d = 0; d < groups.length; d++) {
            if (d != myGroup) {
                op.expect(server(d, b), id(step, b, SLOT_CROSS), stagingBucket(b, members.length + other++),
                        ChunkSink.COPY, () -> sumProgress(op, data, step, b));
            }
        }
    }

    /** Sums this DC's buckets in rank order into the DC-sum slot and sends it to the other DCs' servers. */
    private void reduceDatacenter(Operation op, MemorySegment data, int step, int b) {
        int[] members = groups[myGroup];
        int len = bucketLength(b);
        MemorySegment own = Wire.floats(data, (long) b * bucketFloats, len);
        MemorySegment dcSum = stagingBucket(b, members.length - 1);
        MemorySegment[] inRankOrder = new MemorySegment[members.length];
        for (int j = 0, slot = 0; j < members.length; j++) {
            inRankOrder[j] = members[j] == rank ? own : stagingBucket(b, slot++);
        }
        sumInOrder(inRankOrder, dcSum, len);
        for (int d = 0; d < groups.length; d++) {
            if (d != myGroup) {
                op.send(server(d, b), id(step, b, SLOT_CROSS), dcSum, null);
            }
        }
        sumProgress(op, data, step, b);
    }

    /** Once every DC sum is here: total in data-center order into this rank's buffer, then serve the pulls. */
    private void sumProgress(Operation op, MemorySegment data, int step, int b) {
        if (--sumsRemaining[b] != 0) {
            return;
        }
        int[] members = groups[myGroup];
        int len = bucketLength(b);
        MemorySegment total = Wire.floats(data, (long) b * bucketFloats, len);
        MemorySegment[] inDatacenterOrder = new MemorySegment[groups.length];
        for (int d = 0, other = 0; d < groups.length; d++) {
            inDatacenterOrder[d] = d == myGroup ? stagingBucket(b, members.length - 1)
                    : stagingBucket(b, members.length + other++);
        }
        sumInOrder(inDatacenterOrder, total, len);
        for (int member : members) {
            if (member != rank) {
                op.send(member, id(step, b, SLOT_PULL), total, null);
            }
        }
    }

    /** {@code dest[i] = ((src0[i] + src1[i]) + src2[i]) ...}: a fixed float summation order. */
    static void sumInOrder(MemorySegment[] sources, MemorySegment dest, int floats) {
        for (int i = 0; i < floats; i++) {
            long offset = (long) i * Float.BYTES;
            float acc = sources[0].get(F32, offset);
            for (int k = 1; k < sources.length; k++) {
                acc += sources[k].get(F32, offset);
            }
            dest.set(F32, offset, acc);
        }
    }

    private MemorySegment stagingBucket(int b, int slot) {
        int len = bucketLength(b);
        return Wire.floats(staging, stagingStart[b] + (long) slot * len, len);
    }

    private MessageId id(int step, int bucket, int slot) {
        return Wire.id(jobId, Wire.KIND_ALL_REDUCE, step, bucket, SLOTS, slot);
    }
}
