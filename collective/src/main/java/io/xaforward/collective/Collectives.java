package io.xaforward.collective;

import io.xaforward.transport.ChunkSink;
import io.xaforward.transport.MessageId;
import io.xaforward.transport.ReliableTransport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;

import static io.xaforward.collective.Wire.F32;

/**
 * The collective operations of one rank over its {@link ReliableTransport}: all-reduce (ring, hierarchical or
 * parameter server), broadcast and barrier. Every rank of the group calls the same operations in the same order.
 *
 * <p>Why this shape: data-parallel training across data centers needs an all-reduce that crosses the slow WAN as
 * little as possible ({@link Algorithm#HIERARCHICAL}), results that are bitwise identical on every rank (weight
 * checksums are compared across ranks), and steady-state steps that allocate nothing large. So each algorithm sums in
 * a fixed order and distributes copies, and the staging buffers of an all-reduce are allocated once per element
 * count and reused for every later step.
 *
 * <p>Large tensors are cut into buckets of {@link CollectiveConfig#bucketBytes()}; all receives of an operation are
 * posted before its first send and buckets progress independently, so chunks of bucket k+1 travel while bucket k is
 * reduced. Continuations (next ring step, local sums) run on the calling thread while it waits; the transport thread
 * only moves chunks (and adds received floats into place during reduce-scatter).
 *
 * <p>Buffers must be accessible from the transport's event-loop thread (heap, global, auto or shared arena
 * segments, not confined ones) and hold little-endian floats. Not thread-safe: one operation at a time per instance.
 * After a failure the group is in an unknown state; this instance refuses further operations.
 *
 * <p>Several instances may share one transport and run at the same time (DiLoCo's inner all-reduce inside a data
 * center while its outer all-reduce crosses the gateways): each then needs its own <em>step space</em>, so their
 * message ids never collide ({@link #withStepSpace}, {@link #datacenterGroup}). A sub-group's ranks are numbered
 * 0..n-1 in its {@link CollectiveGroup}; the instance maps them to the transport's ranks itself.
 */
public final class Collectives implements AutoCloseable {

    /** The reduction of an all-reduce. MEAN divides the sum by the world size on every rank. */
    public enum Op { SUM, MEAN }

    private static final MemorySegment EMPTY = MemorySegment.ofArray(new byte[0]);
    /** Step spaces: the top bits of a message's step; space 0 (the default instance) leaves steps as they are. */
    static final int STEP_SPACE_BITS = 4;
    private static final int STEP_BITS = Integer.SIZE - STEP_SPACE_BITS;
    /** Largest step space, and the steps one space holds (2^28: beyond any training run's operation count). */
    public static final int MAX_STEP_SPACE = (1 << STEP_SPACE_BITS) - 1;

    private final CollectiveGroup group;
    private final ReliableTransport transport;
    private final CollectiveConfig config;
    private final int rank;
    private final int worldSize;
    private final int jobId;
    /** Members of each data center, as group ranks (broadcast trees). */
    private final int[][] datacenters;
    /** The same as transport ranks (what the all-reduce plans send to). */
    private final int[][] datacenterPeers;
    private final int[][] flat;
    /** Transport rank of each group rank. */
    private final int[] peers;
    private final int stepSpace;
    private final Arena arena = Arena.ofShared();
    private final AllReducePlans plans = new AllReducePlans(this::newPlan);

    private int trainingStep;
    private int broadcasts;
    private int barriers;
    private boolean hasLastStep;
    private int lastStep;
    private RuntimeException failure;
    private boolean closed;

    /** Does not take ownership of {@code transport} (it must be started, or driven, by its owner). */
    public Collectives(CollectiveGroup group, ReliableTransport transport, CollectiveConfig config) {
        this(group, identity(group.worldSize()), 0, transport, config);
    }

    /**
     * @param peers     transport rank of each group rank ({@code peers.length == group.worldSize()})
     * @param stepSpace 0..{@link #MAX_STEP_SPACE}: the top bits of every message step of this instance
     */
    private Collectives(CollectiveGroup group, int[] peers, int stepSpace, ReliableTransport transport,
                        CollectiveConfig config) {
        this.group = Objects.requireNonNull(group, "group");
        this.transport = Objects.requireNonNull(transport, "transport");
        this.config = Objects.requireNonNull(config, "config");
        if (peers.length != group.worldSize()) {
            throw new IllegalArgumentException(peers.length + " transport ranks for a group of " + group.worldSize());
        }
        if (stepSpace < 0 || stepSpace > MAX_STEP_SPACE) {
            throw new IllegalArgumentException("step space " + stepSpace + " is outside [0, " + MAX_STEP_SPACE + "]");
        }
        if (transport.config().localRank() != peers[group.rank()]) {
            throw new IllegalArgumentException("transport serves rank " + transport.config().localRank()
                    + " but the group says this is rank " + peers[group.rank()]);
        }
        this.peers = peers.clone();
        this.stepSpace = stepSpace;
        this.rank = group.rank();
        this.worldSize = group.worldSize();
        this.jobId = transport.config().jobId();
        this.datacenters = group.datacenters();
        this.datacenterPeers = new int[datacenters.length][];
        for (int d = 0; d < datacenters.length; d++) {
            datacenterPeers[d] = Arrays.stream(datacenters[d]).map(r -> this.peers[r]).toArray();
        }
        this.flat = new int[][]{this.peers.clone()};
    }

    private static int[] identity(int n) {
        int[] all = new int[n];
        for (int r = 0; r < n; r++) {
            all[r] = r;
        }
        return all;
    }

    /**
     * Collectives among the same ranks over the same transport whose messages live in step space {@code stepSpace}
     * (1..{@link #MAX_STEP_SPACE}, distinct from every other instance on the transport that runs at the same time),
     * with {@code config}. The caller closes them.
     */
    public Collectives withStepSpace(int stepSpace, CollectiveConfig config) {
        checkOwnSpace(stepSpace);
        return new Collectives(group, peers, stepSpace, transport, config);
    }

    /**
     * Collectives among the ranks of this rank's data center only (a sub-group numbered 0..n-1 in rank order, one
     * data center: its all-reduces never cross a gateway), in step space {@code stepSpace}, with {@code config}.
     * The caller closes them.
     */
    public Collectives datacenterGroup(int stepSpace, CollectiveConfig config) {
        checkOwnSpace(stepSpace);
        int[] members = datacenters[group.datacenterIndexOf(rank)];
        int[] memberPeers = new int[members.length];
        int me = -1;
        for (int i = 0; i < members.length; i++) {
            memberPeers[i] = peers[members[i]];
            if (members[i] == rank) me = i;
        }
        return new Collectives(CollectiveGroup.flat(me, members.length), memberPeers, stepSpace, transport, config);
    }

    private void checkOwnSpace(int space) {
        if (space == stepSpace) {
            throw new IllegalArgumentException("step space " + space + " is this instance's own: concurrent"
                    + " operations of both would reuse message ids");
        }
    }

    /** The transport rank of group rank {@code r}. */
    public int transportRank(int r) {
        return peers[r];
    }

    /** The step a message of this instance carries on the wire: the caller's step in this instance's space. */
    private int wireStep(int step) {
        if (stepSpace == 0) {
            return step;
        }
        if (step < 0 || step >= (1 << STEP_BITS)) {
            throw new IllegalStateException("step " + Integer.toUnsignedString(step) + " does not fit the "
                    + STEP_BITS + " bits of a step space");
        }
        return stepSpace << STEP_BITS | step;
    }

    public CollectiveGroup group() { return group; }
    public CollectiveConfig config() { return config; }
    public ReliableTransport transport() { return transport; }

    /** All-reduce with the configured algorithm; see {@link #allReduce(MemorySegment, int, Op, int, Algorithm)}. */
    public void allReduce(MemorySegment floats, int count, Op op, int step) {
        allReduce(floats, count, op, step, config.algorithm());
    }

    /**
     * Replaces the first {@code count} floats of {@code floats} on every rank by their sum (or mean) over all ranks.
     * Blocks until this rank's part is done: all its receives arrived and all its sends are acknowledged.
     *
     * @param step names the messages of this call on the wire; consecutive calls must use different steps, and all
     *             ranks the same step, count, op and algorithm
     * @throws CollectiveTimeoutException naming the rank(s) waited for, after the operation timeout or when the
     *                                    transport gives up on a peer
     * @throws CollectiveException        when a message fails otherwise
     */
    public void allReduce(MemorySegment floats, int count, Op op, int step, Algorithm algorithm) {
        allReduce(floats, count, op, step, algorithm, config.wireDtype());
    }

    /**
     * As {@link #allReduce(MemorySegment, int, Op, int, Algorithm)}, with the number format of this call's messages
     * instead of the configured one: e.g. DiLoCo's outer all-reduce in int8 or int4 beside inner all-reduces in
     * fp32. The result is computed in float32 and bitwise identical on every rank in every format; all ranks must
     * pass the same format. Block-quantized formats ({@link WireDtype#quantized()}) need the ring or hierarchical
     * algorithm; their buckets are rounded down to whole blocks.
     */
    public synchronized void allReduce(MemorySegment floats, int count, Op op, int step, Algorithm algorithm,
                                       WireDtype wireDtype) {
        Objects.requireNonNull(floats, "floats");
        Objects.requireNonNull(op, "op");
        Objects.requireNonNull(algorithm, "algorithm");
        Objects.requireNonNull(wireDtype, "wireDtype");
        checkUsable();
        if (algorithm == Algorithm.PARAMETER_SERVER && wireDtype != WireDtype.FP32) {
            throw new IllegalArgumentException(wireDtype.configName() + " on the wire is implemented for the ring "
                    + "and hierarchical all-reduce, not the parameter server");
        }
        if (count < 0 || (long) count * Float.BYTES > floats.byteSize()) {
            throw new IllegalArgumentException("count " + count + " floats does not fit a buffer of "
                    + floats.byteSize() + " bytes");
        }
        if (hasLastStep && step == lastStep) {
            throw new IllegalArgumentException("step " + Integer.toUnsignedString(step) + " was used by the previous "
                    + "all-reduce: reusing message ids back to back lets late retransmissions corrupt the result");
        }
        hasLastStep = true;
        lastStep = step;
        if (count == 0) {
            return;
        }
        MemorySegment data = floats.asSlice(0, (long) count * Float.BYTES);
        int onWire = wireStep(step);
        Operation operation = new Operation(transport, algorithm.name().toLowerCase().replace('_', '-')
                + " all-reduce of step " + Integer.toUnsignedString(step) + " (" + count + " floats)");
        AllReducePlan plan = plans.plan(algorithm, count, wireDtype);
        run(() -> {
            plan.start(operation, data, onWire);
            operation.await(config.operationTimeout());
        });
        if (op == Op.MEAN) {
            float n = worldSize;
            for (long offset = 0; offset < data.byteSize(); offset += Float.BYTES) {
                data.set(F32, offset, data.get(F32, offset) / n);
            }
        }
    }

    /**
     * The training-side gradient reducer ({@code GradientReducer::allReduceMean}): all-reduce MEAN of the first
     * {@code floatCount} floats with the configured algorithm, numbering steps with an internal counter (0, 1, ...).
     * Do not mix with explicit-step {@link #allReduce} calls on the same instance unless their steps differ.
     */
    public void allReduceMean(MemorySegment flatGradients, int floatCount) {
        allReduceMean(flatGradients, floatCount, config.wireDtype());
    }

    /**
     * As {@link #allReduceMean(MemorySegment, int)} in the number format {@code wireDtype}, on the same step
     * counter: calls in different formats (an inner fp32 and an outer int8 all-reduce) never share message ids.
     */
    public void allReduceMean(MemorySegment flatGradients, int floatCount, WireDtype wireDtype) {
        int step;
        synchronized (this) {
            step = trainingStep++;
        }
        allReduce(flatGradients, floatCount, Op.MEAN, step, config.algorithm(), wireDtype);
    }

    /** Steps {@link #allReduceMean} has started so far. */
    public synchronized int trainingSteps() {
        return trainingStep;
    }

    /**
     * Copies {@code data} (all its bytes) from {@code root} to every rank: root sends each bucket to the other ranks of
     * its data center and to one leader (lowest rank) per other data center, which forwards it inside its own; one
     * copy crosses each WAN link. All ranks pass buffers of the same size.
     */
    public synchronized void broadcast(MemorySegment data, int root) {
        Objects.requireNonNull(data, "data");
        checkUsable();
        if (root < 0 || root >= worldSize) {
            throw new IllegalArgumentException("root " + root + " is outside [0, " + worldSize + ")");
        }
        int step = broadcasts++;
        int onWire = wireStep(step);
        Operation operation = new Operation(transport, "broadcast " + step + " from rank " + root + " ("
                + data.byteSize() + " bytes)");
        long bucketBytes = config.bucketBytes();
        long buckets = Math.max(1, (data.byteSize() + bucketBytes - 1) / bucketBytes);
        if (buckets > Wire.MAX_INDEX) {
            throw new IllegalArgumentException("broadcast of " + data.byteSize() + " bytes needs too many buckets");
        }
        int rootDc = group.datacenterIndexOf(root);
        int myDc = group.datacenterIndexOf(rank);
        int leader = myDc == rootDc ? root : datacenters[myDc][0];
        int parent = rank == root ? -1 : (rank == leader ? root : leader);
        int[] children = broadcastChildren(root, rootDc, myDc, leader);
        run(() -> {
            for (int b = 0; b < buckets; b++) {
                long from = b * bucketBytes;
                MemorySegment bucket = data.asSlice(from, Math.min(bucketBytes, data.byteSize() - from));
                MessageId id = Wire.id(jobId, Wire.KIND_BROADCAST, onWire, b, 1, 0);
                Runnable forward = () -> {
                    for (int child : children) {
                        operation.send(peers[child], id, bucket, null);
                    }
                };
                if (parent < 0) {
                    forward.run();
                } else {
                    operation.expect(peers[parent], id, bucket, ChunkSink.COPY, forward);
                }
            }
            operation.await(config.operationTimeout());
        });
    }

    private int[] broadcastChildren(int root, int rootDc, int myDc, int leader) {
        if (rank == root) {
            int[] children = new int[worldSize - 1];
            int n = 0;
            for (int member : datacenters[rootDc]) {
                if (member != root) {
                    children[n++] = member;
                }
            }
            for (int d = 0; d < datacenters.length; d++) {
                if (d != rootDc) {
                    children[n++] = datacenters[d][0];
                }
            }
            return Arrays.copyOf(children, n);
        }
        if (rank == leader && myDc != rootDc) {
            return Arrays.stream(datacenters[myDc]).filter(r -> r != rank).toArray();
        }
        return new int[0];
    }

    /** Message step of {@link #greetPeers()}: no barrier counter or step space reaches it. */
    private static final int GREETING_STEP = -2;
    /** Its bucket index: beyond any dissemination round (at most 16 for 65536 ranks). */
    private static final int GREETING_INDEX = 1 << 20;

    /**
     * Exchanges an empty message with every other rank, once, before the first operation that counts. The first
     * datagrams on a path can be lost while the kernel resolves its next hop (a neighbour cache holds only a few
     * packets), and a peer not heard from yet is retransmitted to after the initial timeout of 1 s, doubling: a job's
     * first step took 5-9 s this way where later steps took under one. After the greeting every path is resolved
     * and every peer's round trip measured. Every rank of the job calls it, in the same place.
     */
    public synchronized void greetPeers() {
        checkUsable();
        Operation operation = new Operation(transport, "greeting");
        MessageId id = Wire.id(jobId, Wire.KIND_BARRIER, GREETING_STEP, GREETING_INDEX, 1, 0);
        run(() -> {
            for (int r = 0; r < worldSize; r++) {
                if (r != rank) {
                    operation.expect(peers[r], id, EMPTY, ChunkSink.COPY, null);
                }
            }
            for (int r = 0; r < worldSize; r++) {
                if (r != rank) {
                    operation.send(peers[r], id, EMPTY, null);
                }
            }
            operation.await(config.operationTimeout());
        });
    }

    /**
     * Returns once every rank has entered the barrier: a dissemination barrier, ceil(log2 n) rounds of empty
     * messages; in round k rank r signals r + 2^k and waits for r - 2^k.
     */
    public synchronized void barrier() {
        checkUsable();
        int counter = barriers++;
        int step = wireStep(counter);
        Operation operation = new Operation(transport, "barrier " + counter);
        int rounds = 0;
        while ((1 << rounds) < worldSize) {
            rounds++;
        }
        int totalRounds = rounds;
        run(() -> {
            for (int k = 0; k < totalRounds; k++) {
                int round = k;
                int from = Math.floorMod(rank - (1 << k), worldSize);
                Runnable then = round + 1 < totalRounds ? () -> signal(operation, step, round + 1) : null;
                operation.expect(peers[from], Wire.id(jobId, Wire.KIND_BARRIER, step, k, 1, 0), EMPTY, ChunkSink.COPY,
                        then);
            }
            if (totalRounds > 0) {
                signal(operation, step, 0);
            }
            operation.await(config.operationTimeout());
        });
    }

    /**
     * Ends this rank's part of a job cleanly: a {@link #barrier()}, so that nobody closes its transport while a peer
     * may still need an acknowledgement, then {@link ReliableTransport#linger} (1 s idle, 5 s at most), so that a peer
     * whose last acknowledgement was lost, and retransmits, gets its answer. Every rank calls it as its last
     * collective, before closing.
     */
    public void finish() throws InterruptedException {
        barrier();
        transport.linger(Duration.ofSeconds(1), Duration.ofSeconds(5));
    }

    private void signal(Operation operation, int step, int round) {
        operation.send(peers[(rank + (1 << round)) % worldSize], Wire.id(jobId, Wire.KIND_BARRIER, step, round, 1, 0),
                EMPTY, null);
    }

    /** Bytes of staging buffers held for all element counts seen so far (they are reused across steps). */
    public synchronized long stagingBytes() {
        return plans.stagingBytes();
    }

    /** Number of (algorithm, element count, wire format) plans built so far; steady-state training keeps this at one. */
    public synchronized int planCount() {
        return plans.size();
    }

    /** Frees the staging buffers; the transport stays open (its owner closes it). */
    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            plans.clear();
            arena.close();
        }
    }

    private AllReducePlan newPlan(Algorithm algorithm, int count, WireDtype wireDtype) {
        int bucketFloats = config.bucketFloats();
        if (wireDtype.quantized()) {
            // Whole blocks per bucket keep one block grid from element 0 over the whole buffer (ErrorFeedback's).
            int block = wireDtype.blockFloats();
            bucketFloats = Math.max(block, bucketFloats - bucketFloats % block);
        }
        int chunkBytes = transport.config().chunkDataBytes();
        return switch (algorithm) {
            case RING -> new RingAllReduce(peers[rank], flat, jobId, count, bucketFloats, wireDtype, chunkBytes, arena);
            case HIERARCHICAL -> new RingAllReduce(peers[rank], datacenterPeers, jobId, count, bucketFloats, wireDtype,
                    chunkBytes, arena);
            case PARAMETER_SERVER -> new ParameterServerAllReduce(peers[rank], datacenterPeers, jobId, count,
                    bucketFloats, arena);
        };
    }

    private void checkUsable() {
        if (closed) {
            throw new IllegalStateException("collectives of rank " + rank + " are closed");
        }
        if (failure != null) {
            throw new IllegalStateException("collectives of rank " + rank + " failed earlier ("
                    + failure.getMessage() + "); the group must be rebuilt", failure);
        }
    }

    private void run(Runnable body) {
        try {
            body.run();
        } catch (RuntimeException e) {
            failure = e;
            throw e;
        }
    }
}
