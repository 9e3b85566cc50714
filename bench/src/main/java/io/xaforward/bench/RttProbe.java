package io.xaforward.bench;

import io.xaforward.protocol.MessageType;
import io.xaforward.protocol.XafHeader;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.testbed.mode.HostEndpoint;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * UDP ping-pong through the gateway: rank {@code a} sends a small XAF CONTROL packet to rank {@code b}, which sends it
 * straight back; the round-trip times give the median and 99th percentile. CONTROL packets pass the XDP sink.
 */
public final class RttProbe {
    /** Round-trip statistics in microseconds. */
    public record Rtt(double medianUs, double p99Us, int samples) {}

    private RttProbe() {}

    public static Rtt measure(IdentifierPlan plan, GatewayMode mode, int a, int b, int samples) throws Exception {
        try (HostEndpoint ea = HostEndpoint.open(plan.host(a)); HostEndpoint eb = HostEndpoint.open(plan.host(b))) {
            IdentifierPlan.Peer toB = plan.addressBook(a).stream().filter(p -> p.rank() == b).findFirst().orElseThrow();
            IdentifierPlan.Peer toA = plan.addressBook(b).stream().filter(p -> p.rank() == a).findFirst().orElseThrow();
            XafHeader hb = new XafHeader();
            hb.wrap(eb.xafBuffer(), 0).init().type(MessageType.CONTROL.code()).networkId(toA.networkId()).jobId(plan.jobId())
                    .jobToken(plan.jobToken()).srcRank(b).dstRank(a).payloadLength(0);
            Thread echo = Thread.ofPlatform().daemon(true).name("rtt-echo").start(() -> {
                try {
                    while (!Thread.currentThread().isInterrupted()) {
                        MemorySegment got = eb.receive(200);
                        if (got == null) continue;
                        hb.wrap(eb.xafBuffer(), 0).chunkIndex(new XafHeader().wrap(got, 0).chunkIndex());
                        eb.send(toA, XafHeader.LENGTH, mode);
                    }
                } catch (Exception e) {
                    // the probe is over
                }
            });
            try {
                XafHeader h = new XafHeader();
                h.wrap(ea.xafBuffer(), 0).init().type(MessageType.CONTROL.code()).networkId(toB.networkId()).jobId(plan.jobId())
                        .jobToken(plan.jobToken()).srcRank(a).dstRank(b).payloadLength(0);
                int warmup = 50;
                double[] rtt = new double[samples];
                int n = 0;
                for (int i = 0; i < samples + warmup; i++) {
                    h.wrap(ea.xafBuffer(), 0).chunkIndex(i);
                    long t0 = System.nanoTime();
                    ea.send(toB, XafHeader.LENGTH, mode);
                    MemorySegment got = ea.receive(1000);
                    long t1 = System.nanoTime();
                    if (got == null || new XafHeader().wrap(got, 0).chunkIndex() != i) continue; // lost or late: skip
                    if (i >= warmup) rtt[n++] = (t1 - t0) / 1000.0;
                }
                if (n == 0) throw new IllegalStateException("no ping-pong reply from rank " + b + " through " + mode.configName());
                double[] s = Arrays.copyOf(rtt, n);
                Arrays.sort(s);
                return new Rtt(s[n / 2], s[Math.min(n - 1, (int) Math.ceil(n * 0.99) - 1)], n);
            } finally {
                echo.interrupt();
                echo.join(2000);
            }
        }
    }
}
