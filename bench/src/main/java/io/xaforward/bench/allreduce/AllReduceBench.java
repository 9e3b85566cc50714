package io.xaforward.bench.allreduce;

import io.xaforward.collective.Algorithm;
import io.xaforward.collective.CollectiveGroup;
import io.xaforward.collective.Collectives;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Times all-reduces of given sizes and reports bandwidth as nccl-tests defines it ({@link #busBandwidth} is the one
 * definition {@code xaf bench allreduce} reports with), so numbers are comparable with GPU cluster results: algbw = bytes / time, busbw = algbw · 2(n−1)/n
 * (the fraction of the data each rank must send and receive in any all-reduce, which makes busbw comparable across
 * rank counts and with link speed). Timed iterations use MEAN on a buffer of ones, which keeps the values stable;
 * one more SUM iteration over integer-valued data checks the result exactly.
 *
 * <p>Two entry points: {@link #run} drives every rank of one process (one thread each, in-memory or UDP transports),
 * {@link #runRank} is what each process runs when ranks live in separate processes.
 */
public final class AllReduceBench {

    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * One size on one rank or (in-process) the slowest rank.
     *
     * @param seconds          mean wall time of one all-reduce
     * @param algBandwidthGBps bytes / seconds / 1e9
     * @param busBandwidthGBps algBandwidthGBps · 2(n−1)/n
     * @param correct          the check iteration produced the exact sum on every rank measured
     */
    public record Result(Algorithm algorithm, int ranks, long bytes, int iterations, double seconds,
                         double algBandwidthGBps, double busBandwidthGBps, boolean correct) {
        @Override
        public String toString() {
            return String.format("%-16s n=%d %12d B %10.1f us  algbw %8.3f GB/s  busbw %8.3f GB/s  %s",
                    algorithm, ranks, bytes, seconds * 1e6, algBandwidthGBps, busBandwidthGBps,
                    correct ? "OK" : "WRONG");
        }
    }

    /** nccl-tests' bus bandwidth factor for all-reduce. */
    public static double busBandwidth(double algBandwidth, int ranks) {
        return algBandwidth * 2.0 * (ranks - 1) / ranks;
    }

    private final List<Collectives> ranks;
    private final Algorithm algorithm;
    private int nextStep;

    /** @param ranks one instance per rank, in rank order, all in this process */
    public AllReduceBench(List<Collectives> ranks, Algorithm algorithm, int firstStep) {
        this.ranks = List.copyOf(ranks);
        this.algorithm = Objects.requireNonNull(algorithm, "algorithm");
        this.nextStep = firstStep;
        for (int r = 0; r < this.ranks.size(); r++) {
            CollectiveGroup g = this.ranks.get(r).group();
            if (g.rank() != r || g.worldSize() != this.ranks.size()) {
                throw new IllegalArgumentException("instance " + r + " is rank " + g.rank() + " of "
                        + g.worldSize() + ": pass one instance per rank, in rank order");
            }
        }
    }

    /** Runs every size on all ranks at once; each result reports the slowest rank's time. */
    public List<Result> run(long[] sizesBytes, int warmup, int iterations) throws InterruptedException {
        List<Result> results = new ArrayList<>();
        ExecutorService threads = Executors.newFixedThreadPool(ranks.size(), r -> {
            Thread t = new Thread(r, "allreduce-bench");
            t.setDaemon(true);
            return t;
        });
        try {
            for (long bytes : sizesBytes) {
                int firstStep = nextStep;
                nextStep += warmup + iterations + 1;
                List<Future<Result>> perRank = new ArrayList<>();
                for (Collectives c : ranks) {
                    perRank.add(threads.submit(() -> runRank(c, algorithm, bytes, warmup, iterations, firstStep)));
                }
                Result slowest = null;
                boolean correct = true;
                for (Future<Result> f : perRank) {
                    Result r;
                    try {
                        r = f.get();
                    } catch (ExecutionException e) {
                        throw e.getCause() instanceof RuntimeException re ? re : new IllegalStateException(e.getCause());
                    }
                    correct &= r.correct();
                    if (slowest == null || r.seconds() > slowest.seconds()) {
                        slowest = r;
                    }
                }
                results.add(new Result(algorithm, ranks.size(), bytes, iterations, slowest.seconds(),
                        slowest.algBandwidthGBps(), slowest.busBandwidthGBps(), correct));
            }
        } finally {
            threads.shutdownNow();
        }
        return results;
    }

    /**
     * Runs one size on one rank: {@code warmup + iterations + 1} all-reduces on steps {@code firstStep, ...}; every
     * rank must call it with the same arguments. {@code bytes} is rounded down to whole floats.
     */
    public static Result runRank(Collectives collectives, Algorithm algorithm, long bytes, int warmup, int iterations,
                                 int firstStep) {
        if (bytes < Float.BYTES || bytes / Float.BYTES > Integer.MAX_VALUE || iterations < 1 || warmup < 0) {
            throw new IllegalArgumentException("need at least one float, at most 2^31 floats and one iteration; got "
                    + bytes + " bytes, " + iterations + " iterations, " + warmup + " warm-up");
        }
        int count = (int) (bytes / Float.BYTES);
        int n = collectives.group().worldSize();
        int rank = collectives.group().rank();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buffer = arena.allocate((long) count * Float.BYTES, 64);
            for (long i = 0; i < count; i++) {
                buffer.set(F32, i * Float.BYTES, 1f);
            }
            int step = firstStep;
            for (int i = 0; i < warmup; i++) {
                collectives.allReduce(buffer, count, Collectives.Op.MEAN, step++, algorithm);
            }
            long start = System.nanoTime();
            for (int i = 0; i < iterations; i++) {
                collectives.allReduce(buffer, count, Collectives.Op.MEAN, step++, algorithm);
            }
            double seconds = (System.nanoTime() - start) / 1e9 / iterations;
            for (int i = 0; i < count; i++) {
                buffer.set(F32, (long) i * Float.BYTES, checkValue(i, rank));
            }
            collectives.allReduce(buffer, count, Collectives.Op.SUM, step, algorithm);
            boolean correct = true;
            for (int i = 0; i < count && correct; i++) {
                float expected = 0;
                for (int r = 0; r < n; r++) {
                    expected += checkValue(i, r);
                }
                correct = buffer.get(F32, (long) i * Float.BYTES) == expected;
            }
            double algbw = count * (double) Float.BYTES / seconds / 1e9;
            return new Result(algorithm, n, (long) count * Float.BYTES, iterations, seconds, algbw,
                    busBandwidth(algbw, n), correct);
        }
    }

    /** Small integers: their float sums are exact in any order. */
    private static float checkValue(int index, int rank) {
        return (float) (((index * 31L + rank * 7L) % 101) - 50);
    }
}
