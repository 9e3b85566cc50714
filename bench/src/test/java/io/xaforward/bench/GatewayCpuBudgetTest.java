package io.xaforward.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The gateway CPU budget holds the same for a gateway in the kernel (the XDP program and Linux forwarding, both in
 * the ports' threaded-NAPI kernel threads) and for a gateway process (the relay): with the senders flat out, none
 * uses more than its budget of the gateway's CPU (measured from /proc/PID/schedstat of its kthreads and threads),
 * and each that used more without the budget is held to it: the relay within 5 points of its budget in every sample
 * (its socket buffers always hold work), the NAPI threads of a kernel gateway never above their budget. Needs root
 * and two CPUs.
 *
 * <p>The test asserts only what the budget controls, the gateway's share of its CPU. How many packets a gateway
 * forwards with and without a budget depends on how fast the senders on the other CPU produce them (a kernel gateway
 * held to its budget finds more packets per poll and spends less on each, and has been seen forwarding more with the
 * budget than without it), so throughput relations live in the forwarding bench ({@code xaf bench forward
 * --gateway-cpu}), not here.
 *
 * <p>Where the kernel runs the live generator ({@link LiveFrameGenerator#probe}), the budget is checked twice: with it
 * (the XDP gateway at millions of packets per second) and as a kernel that refuses it would run the bench, with
 * socket senders alone. Where it refuses, the second is what runs; the budget is checked all the same.
 */
class GatewayCpuBudgetTest {
    static final double BUDGET = 0.25;

    @Test
    @Timeout(480)
    void budgetLimitsKernelAndProcessGatewaysAlike() throws Exception {
        System.setProperty("java.awt.headless", "true");
        assertTrue(ForwardBench.pinning(), "this test needs two CPUs");
        LiveFrameGenerator.Support kernel = LiveFrameGenerator.probe();
        if (kernel.supported()) {
            budgetHolds(kernel);
            budgetHolds(LiveFrameGenerator.Support.refused("socket senders alone, as on a kernel that refuses live frames"));
        } else {
            System.out.println("GatewayCpuBudgetTest: " + kernel.reason() + "; the budget is checked with socket senders alone");
            budgetHolds(kernel);
        }
    }

    private static void budgetHolds(LiveFrameGenerator.Support liveFrames) throws Exception {
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(log, true, StandardCharsets.UTF_8);
        ForwardBench.Options base = new ForwardBench.Options(false, 1, List.of(64),
                List.of(ForwardBench.Mode.XDP, ForwardBench.Mode.KERNEL, ForwardBench.Mode.RELAY), 1000, 0, 1000)
                .withFlows(List.of("ipv4->ipv4"));
        ForwardBench.Result free = new ForwardBench(base, out, liveFrames).run("test: no budget");
        ForwardBench.Result held = new ForwardBench(base.withGatewayCpu(BUDGET), out, liveFrames).run("test: budget 25%");
        String progress = log.toString(StandardCharsets.UTF_8);
        assertFalse(held.samples().isEmpty(), progress);
        StringBuilder table = new StringBuilder();
        int limited = 0;
        double napiBest = 0, napiExpected = Double.NaN;
        for (ForwardBench.Sample h : held.samples()) {
            ForwardBench.Sample f = free.samples().stream()
                    .filter(s -> s.mode() == h.mode() && s.sender() == h.sender() && s.flow().equals(h.flow())).findFirst().orElseThrow();
            table.append(String.format(Locale.ROOT, "%s %s: free %.0f kpps at %.0f%% CPU, budget %.0f kpps at %.0f%% CPU%n",
                    h.mode(), h.sender(), f.pps() / 1e3, f.gatewayCpuShare() * 100, h.pps() / 1e3, h.gatewayCpuShare() * 100));
            String what = h.mode() + " " + h.sender() + "\n" + table + progress;
            // never more than the budget, in the kernel or in a process
            assertTrue(h.gatewayCpuShare() <= BUDGET + 0.05, what);
            // 10 points over the budget: a CI run's free skb samples used 34-39% against 17-21% with the budget
            if (f.gatewayCpuShare() >= BUDGET + 0.10) {
                // the gateway used more than its budget without one; with it, it uses its budget: a process gateway
                // all of it over the whole sample (its socket buffers keep what arrived while the budget thread held
                // the CPU, and it drains them after the senders stop); a kernel gateway a quarter at least in every
                // sample (with the live generator, 6 Mpps, the veth's 256-slot ring, not the budget, limits what each
                // period holds: 15-17% measured quiet)
                double floor = h.mode() == ForwardBench.Mode.RELAY ? BUDGET - 0.05 : BUDGET / 4;
                assertTrue(h.gatewayCpuShare() >= floor, what);
                limited++;
                if (h.mode() != ForwardBench.Mode.RELAY && h.sender() == ForwardBench.Sender.SKB) {
                    // NAPI threads have nothing to do in the drain after the senders stop: over the sample they can
                    // use the budget of the sending window only (22.7% of a 1.1 s sample at 25%)
                    napiExpected = BUDGET * h.seconds() / (h.seconds() + ForwardBench.DRAIN_MS / 1e3);
                    napiBest = Math.max(napiBest, h.gatewayCpuShare());
                }
            }
        }
        // the live generator drives the XDP gateway exactly where the kernel runs it, and the report says when it did not
        String modes = table.toString();
        assertEquals(liveFrames.supported(),
                held.samples().stream().anyMatch(s -> s.mode() == ForwardBench.Mode.XDP && s.sender() == ForwardBench.Sender.LIVE),
                modes + progress);
        assertEquals(liveFrames.supported() ? null : liveFrames.reason(), held.liveFramesRefused());
        assertEquals(!liveFrames.supported(), progress.contains("bench: no live generator: " + liveFrames.reason()), progress);
        assertTrue(limited >= 2, "fewer than two samples used more than the budget without it:\n" + modes + progress);
        assertTrue(held.samples().stream().anyMatch(s -> s.mode() == ForwardBench.Mode.RELAY), modes);
        // and the NAPI threads of a kernel gateway with skb senders are held to the budget of the sending window
        // (within 5 points, as a process is in CpuBudgetTest). How close below it they come depends on what the
        // senders offer, so only the bound the budget sets is asserted.
        assertTrue(!Double.isNaN(napiExpected), "no kernel gateway with skb senders used more than its budget without it:\n" + modes + progress);
        assertTrue(napiBest <= napiExpected + 0.05, "kernel gateways' best share " + napiBest + " against "
                + napiExpected + ":\n" + modes + progress);
        assertTrue(progress.contains("gateway CPU budget: 25% of CPU 1"), progress);
        System.out.print(modes);
    }
}
