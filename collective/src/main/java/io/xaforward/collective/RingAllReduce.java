package io.xaforward.collective;

import io.xaforward.transport.ChunkSink;
import io.xaforward.transport.FloatSumSink;
import io.xaforward.transport.MessageId;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Ring all-reduce, flat or hierarchical, for one element count (built once per count and reused across steps).
 *
 * <p>Every bucket runs independently, so chunks of bucket k+1 travel while bucket k is being reduced:
 * <ol>
 *   <li>Reduce-scatter over a ring inside each group (the whole world for {@link Algorithm#RING}, each data center
 *   for {@link Algorithm#HIERARCHICAL}). The bucket is cut into m segments; at ring step s member p sends segment
 *   p-s-1 to p+1 and receives segment p-s-2 from p-1, adding it into its buffer ({@link FloatSumSink}). Afterwards
 *   member p holds its group's sum of segment p (its shard), summed in the fixed order of the ring.</li>
 *   <li>Hierarchical only: shard exchange between data centers. Member p of DC a sends to member q of DC b the part
 *   of its shard that overlaps q's shard (with equal DC sizes that is exactly the same-index rank and the whole
 *   shard; with unequal sizes each rank talks to the one or few ranks whose shards overlap its own), receives the
 *   same range of DC b's partial sum, and adds all DC partials in data-center order.</li>
 *   <li>All-gather over the same ring: member p passes on what it received, copying segments in place.</li>
 * </ol>
 * Each element's value is thus computed by exactly one chain of float additions whose order depends only on the
 * group, and copied everywhere else: all ranks end with bitwise-identical results.
 *
 * <p>bf16 on the wire ({@link WireDtype#BF16}): each send is first rounded to bf16 into a mirror buffer (2 bytes
 * per float of the input, same element index) and sent from there; reduce-scatter receives are added in float32
 * straight from the receive buffer, other receives stored as float32. Before a rank sends a value that other ranks
 * keep (its partial for the data-center exchange, its reduced shard for the all-gather), it rounds its own copy to
 * bf16 too, so every rank still ends with bitwise-identical results.
 *
 * <p>Block-quantized wire ({@link WireDtype#INT8}, {@link WireDtype#INT4}; {@link BlockQuantizer}): segments, shards
 * and overlaps start on block boundaries (parts are cut in whole blocks, {@link Wire#partStart(int, int, int, int)}),
 * so every message of a bucket uses the same block grid. Each send of a partial sum is encoded into the image of its
 * part (an image buffer per segment and per overlap); reduce-scatter receives are decoded and added in float32
 * straight from the receive buffer, exchange receives decoded into staging. The owner of a shard encodes it, replaces
 * its own floats by the decoded image, and sends that image; all-gather receivers decode it and keep the received
 * bytes, which they pass on unchanged, so every rank decodes the very same bytes. The partial a rank sends to other
 * data centers is likewise rounded in place (block by block, as its messages are) before the data centers are
 * combined.
 *
 * <p>Buffer reuse: a segment is received into only after every earlier send of that segment has been fully received
 * by its destination (the data causally depends on it), so a late retransmission of an already-delivered chunk can
 * only be dropped as a duplicate. Within the exchange the shard is overwritten only after its sends are acknowledged.
 */
final class RingAllReduce extends AllReducePlan {
    private static final MemorySegment EMPTY = MemorySegment.ofArray(new byte[0]);
    private final int jobId;
    private final int[][] groups;
    private final int myGroup;
    private final int myIndex;
    private final int m;
    private final int next;
    private final int prev;
    private final int slotsPerBucket;
    private final int maxGroup;
    private final int count;
    private final int bucketFloats;
    private final int buckets;
    private final MemorySegment staging;
    private final long[] stagingStart;
    private final int[] exchangeRemaining;
    private final boolean bf16;
    /** bf16 images of the data, element i at byte 2i (bf16 wire only). */
    private final MemorySegment mirror;
    /** Block-quantized wire only (else null): the format, and where each part's encoded image lives. */
    private final BlockQuantizer quant;
    private final int align;
    private final MemorySegment images;
    /** Image offset of segment i of bucket b at [b * m + i]; of the k-th overlap of bucket b at [overlapBase[b] + k]. */
    private final long[] segmentImageAt;
    private final long[] overlapImageAt;
    private final int[] overlapBase;

    /** @param groups members of each group, ascending by rank; groups ordered by data center. */
    RingAllReduce(int rank, int[][] groups, int jobId, int count, int bucketFloats, WireDtype wire, int chunkBytes,
                  Arena arena) {
        this.jobId = jobId;
        this.groups = groups;
        int g = -1;
        int idx = -1;
        int largest = 1;
        for (int d = 0; d < groups.length; d++) {
            largest = Math.max(largest, groups[d].length);
            for (int i = 0; i < groups[d].length; i++) {
                if (groups[d][i] == rank) {
                    g = d;
                    idx = i;
                }
            }
        }
        if (g < 0) {
            throw new IllegalArgumentException("rank " + rank + " is in no group");
        }
        this.myGroup = g;
        this.myIndex = idx;
        this.m = groups[g].length;
        this.next = groups[g][(idx + 1) % m];
        this.prev = groups[g][(idx + m - 1) % m];
        this.maxGroup = largest;
        this.slotsPerBucket = 2 * largest + 1;
        this.count = count;
        this.bucketFloats = bucketFloats;
        this.quant = wire.quantized() ? new BlockQuantizer(wire, chunkBytes) : null;
        this.align = quant == null ? 1 : wire.blockFloats();
        if (quant != null && bucketFloats % align != 0) {
            throw new IllegalArgumentException("buckets of " + bucketFloats + " floats are not whole "
                    + wire.configName() + " blocks of " + align);
        }
        this.buckets = count == 0 ? 0 : (int) (((long) count + bucketFloats - 1) / bucketFloats);
        this.stagingStart = new long[buckets + 1];
        for (int b = 0; b < buckets; b++) {
            int len = bucketLength(b);
            int shard = part(len, m, myIndex + 1) - part(len, m, myIndex);
            stagingStart[b + 1] = stagingStart[b] + (long) (groups.length - 1) * shard;
        }
        long stagingFloats = stagingStart[buckets];
        this.staging = stagingFloats == 0 ? MemorySegment.NULL
                : arena.allocate(stagingFloats * Float.BYTES, 64);
        this.exchangeRemaining = new int[buckets];
        this.bf16 = wire == WireDtype.BF16;
        this.mirror = bf16 && count > 0 ? arena.allocate((long) count * 2, 64) : MemorySegment.NULL;
        if (quant == null) {
            this.segmentImageAt = null;
            this.overlapImageAt = null;
            this.overlapBase = null;
            this.images = MemorySegment.NULL;
            return;
        }
        this.segmentImageAt = new long[buckets * m];
        this.overlapBase = new int[buckets + 1];
        long imageBytes = 0;
        for (int b = 0; b < buckets; b++) {
            int len = bucketLength(b);
            for (int i = 0; i < m; i++) {
                segmentImageAt[b * m + i] = imageBytes;
                imageBytes += quant.wireBytes(part(len, m, i + 1) - part(len, m, i));
            }
            int[] overlaps = {0};
            forEachOverlap(b, (peer, dcOrder, from, to) -> overlaps[0]++);
            overlapBase[b + 1] = overlapBase[b] + overlaps[0];
        }
        this.overlapImageAt = new long[overlapBase[buckets]];
        for (int b = 0; b < buckets; b++) {
            int[] k = {overlapBase[b]};
            long[] at = {imageBytes};
            forEachOverlap(b, (peer, dcOrder, from, to) -> {
                overlapImageAt[k[0]++] = at[0];
                at[0] += quant.wireBytes(to - from);
            });
            imageBytes = at[0];
        }
        this.images = imageBytes == 0 ? MemorySegment.NULL : arena.allocate(imageBytes, 64);
    }

    @Override
    long stagingBytes() {
        return staging.byteSize() + mirror.byteSize() + images.byteSize();
    }

    /** Start of part i of n of a bucket of len floats: balanced, in whole blocks for the quantized wire. */
    private int part(int len, int parts, int i) {
        return Wire.partStart(len, parts, i, align);
    }

    private int bucketLength(int b) {
        return (int) Math.min(bucketFloats, (long) count - (long) b * bucketFloats);
    }

    /** Posts every expect of the step, then the first sends; continuations run inside {@code op.await}. */
    @Override
    void start(Operation op, MemorySegment data, int step) {
        for (int b = 0; b < buckets; b++) {
            postExpects(op, data, step, b);
        }
        for (int b = 0; b < buckets; b++) {
            if (m > 1) {
                sendReduceScatter(op, data, step, b, 0);
            } else {
                shardReduced(op, data, step, b);
            }
        }
    }

    private void postExpects(Operation op, MemorySegment data, int step, int b) {
        for (int s = 0; s < m - 1; s++) {
            int stepIndex = s;
            Runnable then = s < m - 2 ? () -> sendReduceScatter(op, data, step, b, stepIndex + 1)
                    : () -> shardReduced(op, data, step, b);
            int seg = Math.floorMod(myIndex - s - 2, m);
            MemorySegment target = segment(data, b, seg);
            if (quant != null) {
                op.expect(prev, id(step, b, s), segmentImage(b, seg),
                        quant.sumInto(target, (int) (target.byteSize() / Float.BYTES)), then);
            } else if (bf16) {
                op.expect(prev, id(step, b, s), mirrorOf(data, target), Bf16.sumInto(target), then);
            } else {
                op.expect(prev, id(step, b, s), target, FloatSumSink.INSTANCE, then);
            }
        }
        exchangeRemaining[b] = 0;
        if (groups.length > 1) {
            int[] k = {quant == null ? 0 : overlapBase[b]};
            forEachOverlap(b, (peer, dcOrder, from, to) -> {
                exchangeRemaining[b] += 2;
                MemorySegment partial = stagingSlice(b, dcOrder, from, to);
                Runnable then = () -> exchangeProgress(op, data, step, b);
                if (quant != null) {
                    // The same range as this rank's send to that peer: its image has the right size (not written).
                    op.expect(peer, id(step, b, 2 * maxGroup), overlapImage(k[0]++, to - from),
                            quant.decodeInto(partial, to - from, false), then);
                } else {
                    op.expect(peer, id(step, b, 2 * maxGroup), bf16 ? partial.asSlice(0, partial.byteSize() / 2)
                            : partial, bf16 ? Bf16.decodeInto(partial) : ChunkSink.COPY, then);
                }
            });
        }
        for (int s = 0; s < m - 1; s++) {
            int stepIndex = s;
            Runnable then = s < m - 2 ? () -> sendAllGather(op, data, step, b, stepIndex + 1) : null;
            int seg = Math.floorMod(myIndex - s - 1, m);
            MemorySegment target = segment(data, b, seg);
            if (quant != null) {
                op.expect(prev, id(step, b, maxGroup + s), segmentImage(b, seg),
                        quant.decodeInto(target, (int) (target.byteSize() / Float.BYTES), true), then);
            } else if (bf16) {
                op.expect(prev, id(step, b, maxGroup + s), mirrorOf(data, target), Bf16.decodeInto(target), then);
            } else {
                op.expect(prev, id(step, b, maxGroup + s), target, ChunkSink.COPY, then);
            }
        }
    }

    private void sendReduceScatter(Operation op, MemorySegment data, int step, int b, int s) {
        int seg = Math.floorMod(myIndex - s - 1, m);
        if (quant != null) {
            MemorySegment part = segment(data, b, seg);
            MemorySegment image = segmentImage(b, seg);
            quant.encode(part, (int) (part.byteSize() / Float.BYTES), image);
            op.send(next, id(step, b, s), image, null, quant.dtype().elementType().code());
            return;
        }
        send(op, next, id(step, b, s), data, segment(data, b, seg), null);
    }

    private void sendAllGather(Operation op, MemorySegment data, int step, int b, int s) {
        int seg = Math.floorMod(myIndex - s, m);
        if (quant != null) {
            // The owner's image was encoded in startAllGather; later steps pass on the bytes received, unchanged.
            op.send(next, id(step, b, maxGroup + s), segmentImage(b, seg), null, quant.dtype().elementType().code());
            return;
        }
        send(op, next, id(step, b, maxGroup + s), data, segment(data, b, seg), null);
    }

    private MemorySegment segmentImage(int b, int seg) {
        int len = bucketLength(b);
        return imageSlice(segmentImageAt[b * m + seg], part(len, m, seg + 1) - part(len, m, seg));
    }

    private MemorySegment overlapImage(int k, int floats) {
        return imageSlice(overlapImageAt[k], floats);
    }

    private MemorySegment imageSlice(long offset, int floats) {
        long bytes = quant.wireBytes(floats);
        return bytes == 0 ? EMPTY : images.asSlice(offset, bytes);
    }

    /** Sends a part of the data as it is, or (bf16 wire) rounded into its mirror first. */
    private void send(Operation op, int peer, MessageId id, MemorySegment data, MemorySegment part, Runnable then) {
        if (bf16) {
            MemorySegment image = mirrorOf(data, part);
            Bf16.encode(part, image, part.byteSize() / Float.BYTES);
            op.send(peer, id, image, then, Bf16.ELEMENT_TYPE);
        } else {
            op.send(peer, id, part, then);
        }
    }

    /** The mirror bytes of a part of the data (same element indices). */
    private MemorySegment mirrorOf(MemorySegment data, MemorySegment part) {
        long firstFloat = (part.address() - data.address()) / Float.BYTES;
        return mirror.asSlice(firstFloat * 2, part.byteSize() / 2);
    }

    /** This rank's reduced shard of bucket b (what the exchange and the all-gather start from). */
    private MemorySegment ownShard(MemorySegment data, int b) {
        return segment(data, b, myIndex);
    }

    private void shardReduced(Operation op, MemorySegment data, int step, int b) {
        if (exchangeRemaining[b] == 0) {
            startAllGather(op, data, step, b);
            return;
        }
        int first = b * bucketFloats;
        if (quant != null) {
            int[] k = {overlapBase[b]};
            forEachOverlap(b, (peer, dcOrder, from, to) -> {
                MemorySegment image = overlapImage(k[0]++, to - from);
                quant.encode(Wire.floats(data, (long) first + from, to - from), to - from, image);
                op.send(peer, id(step, b, 2 * maxGroup), image, () -> exchangeProgress(op, data, step, b),
                        quant.dtype().elementType().code());
            });
            // After encoding from the exact floats: the partial this DC combines must equal what the others decode.
            MemorySegment own = ownShard(data, b);
            BlockQuantizer.roundInPlace(own, (int) (own.byteSize() / Float.BYTES), quant.dtype());
            return;
        }
        if (bf16) {
            Bf16.roundInPlace(ownShard(data, b)); // the partial this DC combines must equal what the others get
        }
        forEachOverlap(b, (peer, dcOrder, from, to) -> send(op, peer, id(step, b, 2 * maxGroup), data,
                Wire.floats(data, (long) first + from, to - from), () -> exchangeProgress(op, data, step, b)));
    }

    private void exchangeProgress(Operation op, MemorySegment data, int step, int b) {
        if (--exchangeRemaining[b] == 0) {
            combineDatacenters(data, b);
            startAllGather(op, data, step, b);
        }
    }

    /** Adds the partial sums of all data centers for this rank's shard, in data-center order, into the shard. */
    private void combineDatacenters(MemorySegment data, int b) {
        int len = bucketLength(b);
        int lo = part(len, m, myIndex);
        int shard = part(len, m, myIndex + 1) - lo;
        MemorySegment own = Wire.floats(data, (long) b * bucketFloats + lo, shard);
        MemorySegment[] partials = new MemorySegment[groups.length];
        for (int d = 0, order = 0; d < groups.length; d++) {
            partials[d] = d == myGroup ? own
                    : Wire.floats(staging, stagingStart[b] + (long) (order++) * shard, shard);
        }
        ParameterServerAllReduce.sumInOrder(partials, own, shard); // reads element i of own before writing it
    }

    private void startAllGather(Operation op, MemorySegment data, int step, int b) {
        if (quant != null) {
            MemorySegment own = ownShard(data, b);
            int n = (int) (own.byteSize() / Float.BYTES);
            if (m > 1) {
                // Keep exactly what the other members decode: the image's values, not the exact sum.
                MemorySegment image = segmentImage(b, myIndex);
                quant.encode(own, n, image);
                quant.decode(image, n, own);
                sendAllGather(op, data, step, b, 0);
            } else {
                // Alone in its data center, but the other data centers round their copies of this range: so must it.
                BlockQuantizer.roundInPlace(own, n, quant.dtype());
            }
            return;
        }
        if (bf16) {
            Bf16.roundInPlace(ownShard(data, b)); // keep exactly the value the other members will receive
        }
        if (m > 1) {
            sendAllGather(op, data, step, b, 0);
        }
    }

    private interface OverlapVisitor {
        void visit(int peer, int dcOrder, int from, int to);
    }

    /**
     * Visits every rank of another data center whose shard overlaps this rank's shard, with the overlap as float
     * offsets within the bucket; dcOrder numbers the other data centers 0.. in order (the staging slot).
     */
    private void forEachOverlap(int b, OverlapVisitor visitor) {
        int len = bucketLength(b);
        int lo = part(len, m, myIndex);
        int hi = part(len, m, myIndex + 1);
        int order = 0;
        for (int d = 0; d < groups.length; d++) {
            if (d == myGroup) {
                continue;
            }
            int[] members = groups[d];
            for (int q = 0; q < members.length; q++) {
                int from = Math.max(lo, part(len, members.length, q));
                int to = Math.min(hi, part(len, members.length, q + 1));
                if (from < to) {
                    visitor.visit(members[q], order, from, to);
                }
            }
            order++;
        }
    }

    private MemorySegment stagingSlice(int b, int dcOrder, int from, int to) {
        int len = bucketLength(b);
        int lo = part(len, m, myIndex);
        int shard = part(len, m, myIndex + 1) - lo;
        return Wire.floats(staging, stagingStart[b] + (long) dcOrder * shard + (from - lo), to - from);
    }

    private MemorySegment segment(MemorySegment data, int b, int segmentIndex) {
        int len = bucketLength(b);
        int from = part(len, m, segmentIndex);
        int to = part(len, m, segmentIndex + 1);
        return Wire.floats(data, (long) b * bucketFloats + from, to - from);
    }

    private MessageId id(int step, int bucket, int slot) {
        return Wire.id(jobId, Wire.KIND_ALL_REDUCE, step, bucket, slotsPerBucket, slot);
    }
}
