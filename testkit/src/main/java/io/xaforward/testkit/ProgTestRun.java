package io.xaforward.testkit;

import io.xaforward.dataplane.BpfException;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.MemoryLayout.structLayout;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Runs an XDP program once on a frame with BPF_PROG_TEST_RUN (bpf_prog_test_run_opts) and returns its action and the
 * rewritten frame: the data plane's unit-test harness, no network needed. The ingress ifindex in the context must
 * name an interface that exists in this network namespace (lo is 1).
 */
public final class ProgTestRun {
    private ProgTestRun() {}

    /** XDP actions. */
    public static final int XDP_ABORTED = 0, XDP_DROP = 1, XDP_PASS = 2, XDP_TX = 3, XDP_REDIRECT = 4;

    /** Room for the program to grow the frame's headers (bpf_xdp_adjust_head) in the output buffer. */
    public static final int OUTPUT_HEADROOM = 256;

    /** struct bpf_test_run_opts from /usr/include/bpf/bpf.h (libbpf 1.1): size_t sz comes first. */
    static final StructLayout OPTS = structLayout(
            JAVA_LONG.withName("sz"),
            ADDRESS.withName("data_in"),
            ADDRESS.withName("data_out"),
            JAVA_INT.withName("data_size_in"),
            JAVA_INT.withName("data_size_out"),
            ADDRESS.withName("ctx_in"),
            ADDRESS.withName("ctx_out"),
            JAVA_INT.withName("ctx_size_in"),
            JAVA_INT.withName("ctx_size_out"),
            JAVA_INT.withName("retval"),
            JAVA_INT.withName("repeat"),
            JAVA_INT.withName("duration"),
            JAVA_INT.withName("flags"),
            JAVA_INT.withName("cpu"),
            JAVA_INT.withName("batch_size"));

    /** struct xdp_md: data, data_end, data_meta, ingress_ifindex, rx_queue_index, egress_ifindex. */
    static final StructLayout XDP_MD = structLayout(
            JAVA_INT.withName("data"), JAVA_INT.withName("data_end"), JAVA_INT.withName("data_meta"),
            JAVA_INT.withName("ingress_ifindex"), JAVA_INT.withName("rx_queue_index"), JAVA_INT.withName("egress_ifindex"));

    /**
     * bpf_prog_test_run_opts(prog_fd, opts), bound here rather than in dataplane's LibBpf: the control plane never
     * runs a program on a buffer, so the gateway's jars carry no such call. Returns 0 or -errno, as libbpf's int calls do.
     */
    private static final MethodHandle TEST_RUN = Linker.nativeLinker().downcallHandle(
            SymbolLookup.libraryLookup("libbpf.so.1", Arena.global()).findOrThrow("bpf_prog_test_run_opts"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));

    static int testRun(int progFd, MemorySegment opts) {
        try {
            return (int) TEST_RUN.invokeExact(progFd, opts);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static long off(StructLayout l, String f) { return l.byteOffset(groupElement(f)); }

    /** What the program did with the frame. */
    public record Result(int action, byte[] frame, int durationNs) {
        public String actionName() {
            return switch (action) {
                case XDP_ABORTED -> "XDP_ABORTED";
                case XDP_DROP -> "XDP_DROP";
                case XDP_PASS -> "XDP_PASS";
                case XDP_TX -> "XDP_TX";
                case XDP_REDIRECT -> "XDP_REDIRECT";
                default -> "action " + action;
            };
        }
    }

    /**
     * Runs {@code progFd} once on {@code frame} as if it arrived on {@code ingressIfindex}, rx queue {@code rxQueue}.
     *
     * @throws BpfException when the kernel refuses the run (e.g. EINVAL for an unknown ifindex or queue)
     */
    public static Result run(int progFd, byte[] frame, int ingressIfindex, int rxQueue) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment in = arena.allocate(frame.length, 8);
            MemorySegment.copy(MemorySegment.ofArray(frame), 0, in, 0, frame.length);
            int outCap = frame.length + OUTPUT_HEADROOM;
            MemorySegment out = arena.allocate(outCap, 8);
            MemorySegment ctx = arena.allocate(XDP_MD);
            ctx.set(JAVA_INT, off(XDP_MD, "data"), 0);
            ctx.set(JAVA_INT, off(XDP_MD, "data_end"), frame.length);
            ctx.set(JAVA_INT, off(XDP_MD, "ingress_ifindex"), ingressIfindex);
            ctx.set(JAVA_INT, off(XDP_MD, "rx_queue_index"), rxQueue);

            MemorySegment opts = arena.allocate(OPTS);
            opts.set(JAVA_LONG, off(OPTS, "sz"), OPTS.byteSize());
            opts.set(ADDRESS, off(OPTS, "data_in"), in);
            opts.set(ADDRESS, off(OPTS, "data_out"), out);
            opts.set(JAVA_INT, off(OPTS, "data_size_in"), frame.length);
            opts.set(JAVA_INT, off(OPTS, "data_size_out"), outCap);
            opts.set(ADDRESS, off(OPTS, "ctx_in"), ctx);
            opts.set(JAVA_INT, off(OPTS, "ctx_size_in"), (int) XDP_MD.byteSize());
            opts.set(JAVA_INT, off(OPTS, "repeat"), 1);

            int rc = testRun(progFd, opts);
            if (rc != 0) {
                throw new BpfException("bpf_prog_test_run_opts(prog fd " + progFd + ", " + frame.length
                        + "-byte frame, ingress ifindex " + ingressIfindex + ", rx queue " + rxQueue + ")", rc);
            }
            int outLen = opts.get(JAVA_INT, off(OPTS, "data_size_out"));
            byte[] result = out.asSlice(0, Math.min(outLen, outCap)).toArray(ValueLayout.JAVA_BYTE);
            return new Result(opts.get(JAVA_INT, off(OPTS, "retval")), result, opts.get(JAVA_INT, off(OPTS, "duration")));
        }
    }
}
