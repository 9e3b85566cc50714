package io.xaforward.bench;

import io.xaforward.dataplane.BpfException;
import io.xaforward.dataplane.BpfObject;
import io.xaforward.dataplane.LibBpf;
import io.xaforward.dataplane.sys.NetworkNamespace;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.MemoryLayout.structLayout;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The kernel's own packet generator: BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES runs xaf_trafficgen on a
 * frame {@code repeat} times in batches of 64 and transmits every XDP_TX result out of the sending veth, so the
 * sender costs ~150 ns per frame and is never what limits an XDP measurement. Frames arrive at the gateway as XDP
 * frames (no skb), which is the gateway's best case on veth. It cannot drive the kernel's IP stack (field notes),
 * so kernel and relay modes use {@link SkbSender}.
 */
public final class LiveFrameGenerator {
    private static final int BPF_F_TEST_XDP_LIVE_FRAMES = 1 << 1;
    private static final int BATCH = 64;
    private static final int MAX_REPEAT = 1 << 26;
    private static final int HEAD_MAX = 128; // TRAFFICGEN_HEAD_MAX in xaf_trafficgen.bpf.c
    private static final StructLayout OPTS = structLayout(
            JAVA_LONG.withName("sz"), ADDRESS.withName("data_in"), ADDRESS.withName("data_out"),
            JAVA_INT.withName("data_size_in"), JAVA_INT.withName("data_size_out"),
            ADDRESS.withName("ctx_in"), ADDRESS.withName("ctx_out"),
            JAVA_INT.withName("ctx_size_in"), JAVA_INT.withName("ctx_size_out"),
            JAVA_INT.withName("retval"), JAVA_INT.withName("repeat"), JAVA_INT.withName("duration"),
            JAVA_INT.withName("flags"), JAVA_INT.withName("cpu"), JAVA_INT.withName("batch_size"));
    private static final StructLayout XDP_MD = structLayout(
            JAVA_INT.withName("data"), JAVA_INT.withName("data_end"), JAVA_INT.withName("data_meta"),
            JAVA_INT.withName("ingress_ifindex"), JAVA_INT.withName("rx_queue_index"), JAVA_INT.withName("egress_ifindex"));
    private static final MethodHandle TEST_RUN = Linker.nativeLinker().downcallHandle(
            SymbolLookup.libraryLookup("libbpf.so.1", Arena.global()).findOrThrow("bpf_prog_test_run_opts"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));

    private static final int EPERM = 1;
    /** An IEEE 802 local experimental EtherType: no stack and no gateway takes a frame of it for its own. */
    private static final int PROBE_ETHER_TYPE = 0x88b5;

    private LiveFrameGenerator() {}

    /**
     * What the kernel answered to one live-frames test run: errno 0 when it transmits live frames. Builds of the
     * same kernel version differ here (6.18.44-fc-v1300 refuses them with EPERM, even to root; v1252 allowed them),
     * so the forwarding bench asks before it plans its senders, as the gateway asks before it uses the dispatcher.
     */
    public record Support(int errno, String reason) {
        public boolean supported() { return errno == 0; }
        static final Support YES = new Support(0, "");

        /** A refusal with {@code reason}, for running the bench as it runs where the kernel refuses. */
        static Support refused(String reason) {
            return new Support(1, reason);
        }
    }

    private static volatile Support probed;

    /**
     * Whether this kernel runs BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES, asked once per process. The probe
     * transmits one frame of a local experimental EtherType out of the loopback device of the calling thread's
     * namespace, which has no XDP transmit path, so the kernel drops it and nothing leaves the host. It makes the
     * generator's call (same program, flags and batch size) on another device; LiveFrameGeneratorTest checks that
     * the answer agrees with what the generator then does on a veth.
     */
    public static Support probe() {
        Support s = probed;
        if (s != null) return s;
        synchronized (LiveFrameGenerator.class) {
            if (probed == null) probed = ask();
            return probed;
        }
    }

    private static Support ask() {
        byte[] frame = new byte[60];
        java.util.Arrays.fill(frame, 0, 6, (byte) 0xff);
        frame[12] = (byte) (PROBE_ETHER_TYPE >>> 8);
        frame[13] = (byte) PROBE_ETHER_TYPE;
        try (BpfObject obj = BpfObject.openResource("bpf/xaf_trafficgen.bpf.o").load(); Arena arena = Arena.ofConfined()) {
            int rc = testRun(obj.programFd("xaf_trafficgen"), arena, frame, LibBpf.ifNameToIndex("lo"), 1);
            if (rc == 0) return Support.YES;
            int errno = -rc;
            return new Support(errno, "this kernel (" + System.getProperty("os.version") + ") refuses BPF_PROG_TEST_RUN with"
                    + " BPF_F_TEST_XDP_LIVE_FRAMES (errno " + errno + (errno == EPERM ? ", EPERM even to root" : "")
                    + "), the kernel's own packet generator");
        } catch (BpfException e) {
            return new Support(e.errno() == 0 ? -1 : e.errno(), "the live-frames probe could not run: " + e.getMessage());
        }
    }

    /** One live-frames test run of {@code repeat} copies of {@code frame} as if received on {@code ifindex}; -errno or 0. */
    private static int testRun(int prog, Arena arena, byte[] frame, int ifindex, int repeat) {
        MemorySegment opts = options(arena, frame, ifindex);
        opts.set(JAVA_INT, off(OPTS, "repeat"), repeat);
        try {
            return (int) TEST_RUN.invokeExact(prog, opts);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static MemorySegment options(Arena arena, byte[] frame, int ifindex) {
        MemorySegment in = arena.allocate(frame.length, 64);
        MemorySegment.copy(MemorySegment.ofArray(frame), 0, in, 0, frame.length);
        MemorySegment ctx = arena.allocate(XDP_MD);
        ctx.set(JAVA_INT, off(XDP_MD, "data_end"), frame.length);
        ctx.set(JAVA_INT, off(XDP_MD, "ingress_ifindex"), ifindex);
        MemorySegment opts = arena.allocate(OPTS);
        opts.set(JAVA_LONG, off(OPTS, "sz"), OPTS.byteSize());
        opts.set(ADDRESS, off(OPTS, "data_in"), in);
        opts.set(JAVA_INT, off(OPTS, "data_size_in"), frame.length);
        opts.set(ADDRESS, off(OPTS, "ctx_in"), ctx);
        opts.set(JAVA_INT, off(OPTS, "ctx_size_in"), (int) XDP_MD.byteSize());
        opts.set(JAVA_INT, off(OPTS, "flags"), BPF_F_TEST_XDP_LIVE_FRAMES);
        opts.set(JAVA_INT, off(OPTS, "batch_size"), BATCH);
        return opts;
    }

    private static long off(StructLayout l, String f) {
        return l.byteOffset(groupElement(f));
    }

    /**
     * Transmits {@code frame} out of {@code ifname} in namespace {@code ns} for {@code durationNanos}, in calls of
     * as few calls as fit (the first of {@code perCall} frames, each later one sized to fill the time left at the rate
     * the previous call reached, never under {@code perCall}), numbered from {@code firstSeq}, from one thread inside
     * the namespace, pinned to {@code cpu} (-1: not pinned). Few calls, because every call costs ~24 ms of set-up and
     * tear-down on this kernel whatever its size: with calls of a few thousand frames the generator sent bursts of
     * 0.7 ms every 24 ms (~170 kpps on average) that overran the 256-slot veth ring and left the gateway idle between
     * them. Returns the number of frames transmitted.
     */
    public static long run(String ns, String ifname, byte[] frame, long durationNanos, int perCall, int firstSeq, int cpu) {
        return NetworkNamespace.call(ns, () -> {
            if (cpu >= 0) CpuAffinity.pinCurrentThread(cpu); // a fresh thread per call: nothing to restore
            try (BpfObject obj = BpfObject.openResource("bpf/xaf_trafficgen.bpf.o").load(); Arena arena = Arena.ofConfined()) {
                int prog = obj.programFd("xaf_trafficgen");
                obj.map("seq").updateInt(0, firstSeq, 0);
                // the program writes the frame's original head back before each transmission (see xaf_trafficgen.bpf.c)
                MemorySegment headKey = arena.allocate(JAVA_INT), head = arena.allocate(4 + HEAD_MAX, 4);
                int headLen = Math.min(frame.length, HEAD_MAX - 1);
                head.set(JAVA_INT, 0, headLen);
                MemorySegment.copy(MemorySegment.ofArray(frame), 0, head, 4, headLen);
                obj.map("head").update(headKey, head, 0);
                MemorySegment opts = options(arena, frame, LibBpf.ifNameToIndex(ifname));
                long sent = 0;
                long end = System.nanoTime() + durationNanos;
                int repeat = perCall;
                while (true) {
                    long callStart = System.nanoTime();
                    if (callStart >= end) break;
                    opts.set(JAVA_INT, off(OPTS, "repeat"), repeat);
                    int rc = (int) TEST_RUN.invokeExact(prog, opts);
                    if (rc != 0) throw new BpfException("bpf_prog_test_run_opts(live frames, " + ifname + " in " + ns + ")", rc);
                    sent += repeat;
                    long callEnd = System.nanoTime();
                    // size the next call to fill the time left at the rate this one reached (set-up included)
                    double framesPerNs = (double) repeat / Math.max(1, callEnd - callStart);
                    repeat = (int) Math.max(perCall, Math.min(MAX_REPEAT, (end - callEnd) * framesPerNs));
                }
                return sent;
            } catch (RuntimeException e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        });
    }
}
