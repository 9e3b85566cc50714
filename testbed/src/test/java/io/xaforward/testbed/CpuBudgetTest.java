package io.xaforward.testbed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * The duty-cycle budget holds a process's thread to its share of the gateway CPU. (The same for the gateway's kernel
 * threads: GatewayCpuBudgetTest in the bench module, through live XDP, kernel and relay gateways.)
 */
class CpuBudgetTest {

    /** CPU time a thread pinned to {@code cpu} that always wants to run gets in {@code ms}, as a share. */
    static double spinnerShare(int cpu, long ms) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        long[] cpuNs = new long[2];
        Thread t = Thread.ofPlatform().start(() -> {
            CpuAffinityForTest.pin(cpu);
            var bean = ManagementFactory.getThreadMXBean();
            long x = 0;
            // settle on the CPU, then measure
            long warm = System.nanoTime() + 200_000_000L;
            while (System.nanoTime() < warm) x++;
            cpuNs[0] = bean.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            while (!stop.get()) x++;
            cpuNs[1] = bean.getCurrentThreadCpuTime() - cpuNs[0];
            cpuNs[0] = System.nanoTime() - t0;
            if (x == 42) System.out.print("");
        });
        Thread.sleep(200 + ms);
        stop.set(true);
        t.join();
        return (double) cpuNs[1] / cpuNs[0];
    }

    @Test
    void aBudgetHoldsAProcessToItsShare() throws Exception {
        int cpu = Runtime.getRuntime().availableProcessors() - 1;
        double mostFree = 0;
        double quarterBudgetGot = 0;
        for (double share : new double[]{0.25, 0.5}) {
            // Other work on that CPU (a build beside the test) can only take from the spinner, never add to it: every
            // budgeted sample stays under the budget. What the spinner can reach is the budget times the part of the
            // CPU it gets without one, measured just before (1.0 on a quiet machine); the best of three reaches that.
            double bestShortfall = Double.MAX_VALUE;
            String seen = "";
            for (int sample = 0; sample < 3 && bestShortfall > 0.05; sample++) {
                double free = spinnerShare(cpu, 700);
                mostFree = Math.max(mostFree, free);
                try (CpuBudget b = CpuBudget.start(cpu, share)) {
                    double got = spinnerShare(cpu, 2000);
                    assertTrue(got <= share + 0.05, "budget " + share + ": the spinner got " + got + " of CPU " + cpu);
                    assertTrue(b.periods() > 1500, "periods of 1 ms: " + b.periods());
                    bestShortfall = Math.min(bestShortfall, share * free - got);
                    if (share == 0.25) quarterBudgetGot = Math.max(quarterBudgetGot, got);
                    seen += String.format(" %.3f of %.3f free;", got, free);
                }
            }
            assertTrue(bestShortfall <= 0.05, "budget " + share + ": the spinner got" + seen + " on CPU " + cpu
                    + ", never within 0.05 of budget x free");
        }
        // Without a budget the spinner gets clearly more than under the 25% one (the whole CPU on a quiet machine):
        // the measurement can tell the difference.
        assertTrue(mostFree > quarterBudgetGot + 0.1, "free " + mostFree + ", under a 25% budget " + quarterBudgetGot);
    }

    @Test
    void badSettingsAreRefused() {
        assertEquals(0.25, CpuBudget.parseShare("25%"));
        assertEquals(0.25, CpuBudget.parseShare("0.25"));
        assertEquals(0.25, CpuBudget.parseShare("25"));
        assertEquals(1.0, CpuBudget.parseShare("100%"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> CpuBudget.parseShare("2%")).getMessage().contains("between 5% and 100%"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> CpuBudget.parseShare("half")).getMessage().contains("not a percentage"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> CpuBudget.start(0, 1.5, 10_000_000L)).getMessage().contains("between 5%"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> CpuBudget.start(4096, 0.5, 10_000_000L)).getMessage().contains("does not exist"));
    }
}
