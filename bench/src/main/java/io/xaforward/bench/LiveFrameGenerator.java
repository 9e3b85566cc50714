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

    private LiveFrameGenerator() {}

    private static long off(StructLayout l, String f) {
        return l.byteOffset(groupElement(f));
    }

    /**
     * Transmits {@code frame} out of {@code ifname} in namespace {@code ns} for {@code durationNanos}, in calls of
     * {@code perCall} frames, numbered from {@code firstSeq}, from one thread inside the namespace. Returns the number of frames transmitted.
     */
    public static long run(String ns, String ifname, byte[] frame, long durationNanos, int perCall, int firstSeq) {
        return NetworkNamespace.call(ns, () -> {
            try (BpfObject obj = BpfObject.openResource("bpf/xaf_trafficgen.bpf.o").load(); Arena arena = Arena.ofConfined()) {
                int prog = obj.programFd("xaf_trafficgen");
                obj.map("seq").updateInt(0, firstSeq, 0);
                int ifindex = LibBpf.ifNameToIndex(ifname);
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
                opts.set(JAVA_INT, off(OPTS, "repeat"), perCall);
                opts.set(JAVA_INT, off(OPTS, "flags"), BPF_F_TEST_XDP_LIVE_FRAMES);
                opts.set(JAVA_INT, off(OPTS, "batch_size"), BATCH);
                long sent = 0;
                long end = System.nanoTime() + durationNanos;
                while (System.nanoTime() < end) {
                    int rc = (int) TEST_RUN.invokeExact(prog, opts);
                    if (rc != 0) throw new BpfException("bpf_prog_test_run_opts(live frames, " + ifname + " in " + ns + ")", rc);
                    sent += perCall;
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
