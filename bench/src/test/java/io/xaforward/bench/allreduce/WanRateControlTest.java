package io.xaforward.bench.allreduce;

import io.xaforward.bench.WanProfile;
import io.xaforward.cluster.ClusterRun;
import io.xaforward.testbed.mode.GatewayMode;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The transport's rate controller on the testbed's WAN (the delay line: 20 ms each way, 0.1% random loss, 200 Mbit/s,
 * through the XDP gateway from the IPv4 data center to the IPv6 one): 64 MB sent each way at once, unpaced by any
 * configured rate, three times in the same JVMs, cross without stalling, the payload checked. A stall detector, not a
 * speed claim (the bench measures the rate: docs/bench/README.md): every exchange at least a tenth of the WAN's
 * rate in both directions, the fastest at least a quarter, where the loss-based window with a job's 2048-chunk window
 * carried 12 Mbit/s (6%) on this path, and a first version of the controller, paced at the rate of the barrier
 * messages before the transfer, did not finish in 120 s. The first exchange runs while the JVMs' JIT still compiles
 * the transport (61-79 Mbit/s measured, the later ones 98-138 Mbit/s, on the idle machine and in CI); the rate
 * controller must not learn that slow start as the path's rate.
 */
class WanRateControlTest {
    private static final WanProfile LONG_LOSSY = new WanProfile("long-lossy", "200mbit", "20ms", "0.1%",
            "40 ms round trip, 0.1% random loss");
    private static final long BYTES = 64L << 20;
    /** Exchanges in the same JVMs: the first runs while the JIT still compiles the transport, the later ones after. */
    private static final int EXCHANGES = 3;

    @Test
    void sixtyFourMegabytesEachWayCrossALongLossyWanWithoutStalling() throws Exception {
        Path dir = Files.createTempDirectory("xaf-wan-rate");
        Path topology = LONG_LOSSY.writeApplied(AllReduceAcrossDatacentersTest.shippedTopology("two-dc-wan.yaml"),
                dir.resolve("two-dc-wan-long-lossy.yaml"));
        String prefix = "q" + HexFormat.of().toHexDigits((short) new Random().nextInt(0x1000, 0x10000)).substring(1);
        ClusterRun.Spec cluster = new ClusterRun.Spec(topology, prefix, GatewayMode.XDP, 4, 0x5eed0004, dir);
        AllReduceSpec spec = new AllReduceSpec(cluster, List.of(), List.of(), 0, 1, 1, 0, InputPattern.Kind.RANDOM, 7,
                4L << 20, Duration.ofSeconds(120), 0, BYTES, EXCHANGES);
        ByteArrayOutputStream console = new ByteArrayOutputStream();
        AllReduceJob.Outcome o;
        try {
            o = new AllReduceJob(spec, new PrintStream(console, true), Duration.ofMinutes(4)).run();
        } catch (Exception e) {
            throw new AssertionError(e.getMessage() + "\nconsole:\n" + console, e);
        }
        // Rank 0 times its transfer from the start until it has received 64 MB and its own 64 MB were acknowledged.
        assertEquals(EXCHANGES, o.goodput().size(), "three exchanges: " + o.goodput());
        long rate = LONG_LOSSY.bitsPerSecond();
        long retransmits = 0;
        double best = 0;
        for (AllReduceJob.Goodput g : o.goodput()) {
            System.out.printf("64 MB across 40 ms and 0.1%% loss: %.1f Mbit/s (%.0f%% of %d), %d retransmissions%n",
                    g.bitsPerSecond() / 1e6, 100 * g.bitsPerSecond() / rate, rate / 1_000_000, g.retransmits());
            retransmits += g.retransmits();
            best = Math.max(best, g.bitsPerSecond());
            // No exchange stalls, the first (JIT still compiling, 61-79 Mbit/s measured) included.
            assertTrue(g.bitsPerSecond() >= 0.1 * rate, String.format("%.1f Mbit/s of %d: %s%nranks: %s%nconsole:%n%s",
                    g.bitsPerSecond() / 1e6, rate / 1_000_000, g, o.done(), console));
        }
        // Once compiled, well above what the loss-based window carried on this path (12 Mbit/s).
        assertTrue(best >= 0.25 * rate, String.format("best exchange %.1f Mbit/s of %d: %s%nconsole:%n%s",
                best / 1e6, rate / 1_000_000, o.goodput(), console));
        assertTrue(retransmits > 0, "the WAN lost datagrams, and they were resent: " + o.goodput());
    }
}
