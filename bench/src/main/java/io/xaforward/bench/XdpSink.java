package io.xaforward.bench;

import io.xaforward.dataplane.BpfMap;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

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
    private final NamespacedXdpProgram program;
    private final BpfMap counters;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment key = arena.allocate(4);
    private final MemorySegment scratch;

    /** Replaces any XDP program on {@code ifname} in {@code ns} with the sink. */
    public XdpSink(String ns, String ifname) {
        this.ns = ns;
        this.ifname = ifname;
        this.program = new NamespacedXdpProgram(ns, ifname, "bpf/xaf_sink.bpf.o", "xaf_sink", obj -> { }, "XDP sink");
        this.counters = program.object().map("sink_counters");
        this.scratch = arena.allocate(counters.valueBufferSize(), 8);
    }

    public synchronized Counts counts() {
        long[] v = new long[4];
        for (int i = 0; i < 4; i++) v[i] = counters.sumPerCpuU64(i, key, scratch);
        return new Counts(v[0], v[1], v[2], v[3]);
    }

    @Override
    public void close() {
        program.close();
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
