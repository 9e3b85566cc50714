package io.xaforward.transport;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A microbenchmark harness for a loaded machine: it measures the thread's CPU time per operation, not wall time, so
 * time the thread spends descheduled by other processes does not count, and it interleaves the candidates round by
 * round so that they see the same machine state. Reports the median and the spread over rounds. JMH's figures
 * (wall time) are the reference on a quiet machine; this is what docs/bench/endpoint-cost.md quotes beside them on
 * the shared build machine.
 */
final class CpuTimeBench {
    interface Op {
        long run(); // returns something the JIT cannot drop
    }

    private final Map<String, Op> ops = new LinkedHashMap<>();
    static volatile long sink;

    CpuTimeBench add(String name, Op op) {
        ops.put(name, op);
        return this;
    }

    /** Runs every op {@code perRound} times per round for {@code rounds} rounds (the first 3 are warm-up). */
    void run(int rounds, int perRound) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        Map<String, double[]> ns = new LinkedHashMap<>();
        for (String name : ops.keySet()) ns.put(name, new double[rounds]);
        for (int r = 0; r < rounds + 3; r++) {
            for (Map.Entry<String, Op> e : ops.entrySet()) {
                Op op = e.getValue();
                long acc = 0;
                long t0 = mx.getCurrentThreadCpuTime();
                for (int i = 0; i < perRound; i++) acc += op.run();
                long t1 = mx.getCurrentThreadCpuTime();
                sink += acc;
                if (r >= 3) ns.get(e.getKey())[r - 3] = (t1 - t0) / (double) perRound;
            }
        }
        for (Map.Entry<String, double[]> e : ns.entrySet()) {
            double[] v = e.getValue().clone();
            Arrays.sort(v);
            System.out.printf("%-28s median %8.1f ns/op CPU   [p25 %8.1f, p75 %8.1f] over %d rounds%n", e.getKey(),
                    v[v.length / 2], v[v.length / 4], v[3 * v.length / 4], v.length);
        }
    }
}
