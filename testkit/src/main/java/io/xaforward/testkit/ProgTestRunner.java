package io.xaforward.testkit;

import io.xaforward.dataplane.BpfException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static io.xaforward.testkit.ProgTestRun.OPTS;
import static io.xaforward.testkit.ProgTestRun.OUTPUT_HEADROOM;
import static io.xaforward.testkit.ProgTestRun.XDP_MD;
import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@link ProgTestRun} for many frames: the input, output, context and options buffers are allocated once, so a fuzzer
 * can push millions of frames through an XDP program at the cost of one bpf_prog_test_run_opts call each. Write a
 * frame into {@link #input()}, call {@link #run}, read {@link #output()} up to {@link #outputLength()}. Not
 * thread-safe; {@link #close} frees the buffers.
 */
public final class ProgTestRunner implements AutoCloseable {
    private static final long DATA_END = XDP_MD.byteOffset(groupElement("data_end"));
    private static final long INGRESS = XDP_MD.byteOffset(groupElement("ingress_ifindex"));
    private static final long RX_QUEUE = XDP_MD.byteOffset(groupElement("rx_queue_index"));
    private static final long SIZE_IN = OPTS.byteOffset(groupElement("data_size_in"));
    private static final long SIZE_OUT = OPTS.byteOffset(groupElement("data_size_out"));
    private static final long RETVAL = OPTS.byteOffset(groupElement("retval"));

    private final Arena arena = Arena.ofConfined();
    private final int progFd;
    private final int maxFrame;
    private final MemorySegment in, out, ctx, opts;

    /**
     * @param maxFrame the longest frame {@link #run} will be given (the kernel refuses frames longer than about a page
     *                 minus XDP headroom and tailroom to programs without fragment support; an {@code xdp.frags}
     *                 program such as the gateway gets longer ones as multi-buffer frames)
     */
    public ProgTestRunner(int progFd, int maxFrame) {
        this.progFd = progFd;
        this.maxFrame = maxFrame;
        in = arena.allocate(maxFrame, 8);
        out = arena.allocate(maxFrame + OUTPUT_HEADROOM, 8);
        ctx = arena.allocate(XDP_MD);
        opts = arena.allocate(OPTS);
        opts.set(JAVA_LONG, OPTS.byteOffset(groupElement("sz")), OPTS.byteSize());
        opts.set(ADDRESS, OPTS.byteOffset(groupElement("data_in")), in);
        opts.set(ADDRESS, OPTS.byteOffset(groupElement("data_out")), out);
        opts.set(ADDRESS, OPTS.byteOffset(groupElement("ctx_in")), ctx);
        opts.set(JAVA_INT, OPTS.byteOffset(groupElement("ctx_size_in")), (int) XDP_MD.byteSize());
        opts.set(JAVA_INT, OPTS.byteOffset(groupElement("repeat")), 1);
    }

    /** Where the next frame goes: {@code maxFrame} bytes. */
    public MemorySegment input() { return in; }

    /** The frame the program left behind (after bpf_xdp_adjust_head/tail), valid up to {@link #outputLength()}. */
    public MemorySegment output() { return out; }

    /** Bytes of the output frame of the last run. */
    public int outputLength() {
        return Math.min(opts.get(JAVA_INT, SIZE_OUT), (int) out.byteSize());
    }

    /**
     * Runs the program on the first {@code length} bytes of {@link #input()} as if they arrived on
     * {@code ingressIfindex}, rx queue {@code rxQueue}.
     *
     * @return the XDP action
     * @throws IllegalArgumentException for a length outside 1..maxFrame
     * @throws BpfException when the kernel refuses the run (e.g. EINVAL for a frame shorter than 14 bytes)
     */
    public int run(int length, int ingressIfindex, int rxQueue) {
        if (length < 1 || length > maxFrame) throw new IllegalArgumentException("frame length " + length + " outside 1.." + maxFrame);
        ctx.set(JAVA_INT, DATA_END, length);
        ctx.set(JAVA_INT, INGRESS, ingressIfindex);
        ctx.set(JAVA_INT, RX_QUEUE, rxQueue);
        opts.set(JAVA_INT, SIZE_IN, length);
        opts.set(JAVA_INT, SIZE_OUT, (int) out.byteSize());
        int rc = ProgTestRun.testRun(progFd, opts);
        if (rc != 0) {
            throw new BpfException("bpf_prog_test_run_opts(prog fd " + progFd + ", " + length + "-byte frame, ingress ifindex "
                    + ingressIfindex + ", rx queue " + rxQueue + ")", rc);
        }
        return opts.get(JAVA_INT, RETVAL);
    }

    @Override
    public void close() {
        arena.close();
    }
}
