package io.xaforward.bench;

import io.xaforward.dataplane.BpfMap;
import io.xaforward.dataplane.BpfObject;
import io.xaforward.dataplane.XdpAttachment;
import io.xaforward.dataplane.sys.NetworkNamespace;
import io.xaforward.testbed.Netns;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The receiving end of a measurement: xaf_sink attached in native mode to the receiving host's interface, counting
 * XAF DATA frames, bytes, sequence gaps and reordering per CPU and dropping them in the driver hook, so the receiver
 * never limits the rate. A platform thread in the host's namespace owns the BPF object while it is attached.
 */
public final class XdpSink implements AutoCloseable {
    /** Counter snapshot: frames, bytes, missing sequence numbers, reordered frames. */
    public record Counts(long frames, long bytes, long gaps, long reordered) {
        public Counts minus(Counts o) {
            return new Counts(frames - o.frames, bytes - o.bytes, gaps - o.gaps, reordered - o.reordered);
        }
    }

    private final String ns, ifname;
    private final CountDownLatch stop = new CountDownLatch(1);
    private final CompletableFuture<BpfMap> counters = new CompletableFuture<>();
    private final Thread owner;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment key = arena.allocate(4);
    private MemorySegment scratch;

    /** Replaces any XDP program on {@code ifname} in {@code ns} with the sink. */
    public XdpSink(String ns, String ifname) {
        this.ns = ns;
        this.ifname = ifname;
        Netns.exec(null, "ip", "-n", ns, "link", "set", "dev", ifname, "xdpdrv", "off");
        owner = NetworkNamespace.start(ns, "sink-" + ifname, () -> {
            try (BpfObject obj = BpfObject.openResource("bpf/xaf_sink.bpf.o").load()) {
                XdpAttachment a = XdpAttachment.attach(obj.programFd("xaf_sink"), ifname, false);
                try {
                    counters.complete(obj.map("sink_counters"));
                    stop.await();
                } finally {
                    a.detach();
                }
            } catch (Throwable t) {
                counters.completeExceptionally(t);
            }
        });
        try {
            scratch = arena.allocate(counters.get(20, TimeUnit.SECONDS).valueBufferSize(), 8);
        } catch (Exception e) {
            close();
            throw new IllegalStateException("cannot attach the XDP sink to " + ifname + " in " + ns + ": " + e.getMessage(), e);
        }
    }

    public synchronized Counts counts() {
        BpfMap m = counters.join();
        long[] v = new long[4];
        for (int i = 0; i < 4; i++) v[i] = m.sumPerCpuU64(i, key, scratch);
        return new Counts(v[0], v[1], v[2], v[3]);
    }

    @Override
    public void close() {
        stop.countDown();
        try {
            owner.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        arena.close();
    }

    @Override
    public String toString() {
        return "sink on " + ifname + " in " + ns;
    }

    static List<String> names() {
        return List.of("frames", "bytes", "gaps", "reordered");
    }
}
