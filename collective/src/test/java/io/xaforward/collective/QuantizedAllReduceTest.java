package io.xaforward.collective;

import io.xaforward.transport.LoopbackNetwork;
import io.xaforward.transport.ReliableTransport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * All-reduce with int8 and int4 on the wire, requested per call beside fp32 ones: within the analytic bound of the
 * exact sum, bitwise identical on every rank, and bitwise the same over a lossy network (every chunk decoded once).
 */
class QuantizedAllReduceTest {
    private static final CollectiveConfig CONFIG = new CollectiveConfig(64 << 10, Algorithm.HIERARCHICAL,
            Duration.ofSeconds(30)); // fp32 by default; the quantized format is the call's
    private static final Duration LIMIT = Duration.ofSeconds(60);

    @ParameterizedTest
    @CsvSource({
            "RING, INT8, '0,0,1,1,2', 40003",
            "RING, INT4, '0,0,1,1,2', 40003",
            "HIERARCHICAL, INT8, '0,0,1,1,2', 40003",
            "HIERARCHICAL, INT4, '0,0,1,1,2', 40003",
            "HIERARCHICAL, INT8, '0,0,0,1,1', 40003", // 3 + 2: shards of the two DCs overlap partly
            "HIERARCHICAL, INT4, '0,1', 40003",       // one rank per DC: no ring, only the exchange
            "RING, INT8, '0,0,1,1,2', 300",           // fewer blocks than ranks: some parts are empty
            "HIERARCHICAL, INT4, '0,0,0,1,1', 300"})
    void sumIsWithinTheAnalyticBoundAndBitwiseEqualOnAllRanks(Algorithm algorithm, WireDtype dtype, String dcs,
                                                             int count) throws Exception {
        int[] layout = java.util.Arrays.stream(dcs.split(",")).mapToInt(Integer::parseInt).toArray();
        int n = layout.length;
        float[][] inputs = inputs(n, count, 11);
        float[][] results = new float[n][];
        long quantizedBytes = run(layout, algorithm, dtype, inputs, results, LoopbackNetwork.Impairments.NONE, 1);
        long fp32Bytes = run(layout, algorithm, WireDtype.FP32, inputs, null, LoopbackNetwork.Impairments.NONE, 1);

        int block = dtype.blockFloats();
        double worstShare = 0;
        for (int lo = 0; lo < count; lo += block) {
            int hi = Math.min(count, lo + block);
            double largest = 0;
            for (float[] input : inputs) {
                for (int i = lo; i < hi; i++) {
                    largest = Math.max(largest, Math.abs(input[i]));
                }
            }
            double bound = bound(n, largest, dtype.maxLevel());
            for (int i = lo; i < hi; i++) {
                double exact = 0;
                for (float[] input : inputs) {
                    exact += input[i];
                }
                double error = Math.abs(results[0][i] - exact);
                assertTrue(error <= bound, "element " + i + ": " + results[0][i] + " vs " + exact + ", bound " + bound);
                worstShare = Math.max(worstShare, error / bound);
                for (int r = 1; r < n; r++) {
                    assertEquals(Float.floatToRawIntBits(results[0][i]), Float.floatToRawIntBits(results[r][i]),
                            "rank " + r + " element " + i + " differs from rank 0");
                }
            }
        }
        assertTrue(worstShare > 0, "the format must actually round something");
        System.out.printf("%s %s [%s] %d floats: worst error %.3f of the bound; %d bytes sent, fp32 %d (%.3f)%n",
                algorithm, dtype, dcs, count, worstShare, quantizedBytes, fp32Bytes,
                (double) quantizedBytes / fp32Bytes);
    }

    /**
     * Each element's sum is rounded at most n + 1 times on its way (n - 1 forwarded partial sums, or fewer in a data
     * center plus one exchange, and the all-gather); each rounding is at most half a scale, and a scale is at most
     * (n·A + the error so far) / L for the block's largest input magnitude A.
     */
    private static double bound(int n, double largest, int maxLevel) {
        double error = 0;
        for (int rounding = 0; rounding <= n; rounding++) {
            error += (n * largest + error) / maxLevel * (0.5 + Math.scalb(1.0, -17));
        }
        return error * (1 + 1e-6) + n * Math.scalb(1.0, -23) * n * largest; // and float32 additions
    }

    @ParameterizedTest
    @CsvSource({"RING, INT4", "HIERARCHICAL, INT8"})
    void aLossyNetworkGivesTheSameBits(Algorithm algorithm, WireDtype dtype) throws Exception {
        int[] layout = {0, 0, 1, 1, 2};
        float[][] inputs = inputs(layout.length, 20_011, 23);
        float[][] clean = new float[layout.length][];
        float[][] lossy = new float[layout.length][];
        run(layout, algorithm, dtype, inputs, clean, LoopbackNetwork.Impairments.NONE, 1);
        LoopbackNetwork.Impairments impairments = new LoopbackNetwork.Impairments(0.10, 0.10, 0.10, 0.01);
        run(layout, algorithm, dtype, inputs, lossy, impairments, 91);
        for (int r = 0; r < layout.length; r++) {
            for (int i = 0; i < clean[r].length; i++) {
                assertEquals(Float.floatToRawIntBits(clean[r][i]), Float.floatToRawIntBits(lossy[r][i]),
                        "rank " + r + " element " + i);
            }
        }
    }

    @Test
    void quantizedAndFp32CallsShareOneInstanceAndNonFiniteInputsComeOutNan() throws Exception {
        int[] layout = {0, 0, 1};
        int count = 1000;
        try (Cluster cluster = Cluster.loopback(layout, LoopbackNetwork.Impairments.NONE, 1, CONFIG, b -> b);
             Arena arena = Arena.ofShared()) {
            MemorySegment[] buffers = new MemorySegment[layout.length];
            float[][] integers = new float[layout.length][count];
            for (int r = 0; r < layout.length; r++) {
                for (int i = 0; i < count; i++) {
                    integers[r][i] = (i * 7 + r) % 100 - 50;
                }
            }
            float[][] quantized = inputs(layout.length, count, 5);
            quantized[1][17] = Float.NaN;
            quantized[2][900] = Float.POSITIVE_INFINITY;
            cluster.onAllRanksOk(LIMIT, c -> {
                int r = c.group().rank();
                buffers[r] = Tensors.segment(arena, integers[r]);
                c.allReduce(buffers[r], count, Collectives.Op.SUM, 1); // configured: fp32
                float[] exact = Tensors.read(buffers[r], count);
                c.allReduce(Tensors.segment(arena, quantized[r]), count, Collectives.Op.MEAN, 2, Algorithm.RING,
                        WireDtype.INT4);
                MemorySegment again = Tensors.segment(arena, quantized[r]);
                c.allReduce(again, count, Collectives.Op.SUM, 3, Algorithm.HIERARCHICAL, WireDtype.INT8);
                float[] result = Tensors.read(again, count);
                for (int i = 0; i < count; i++) {
                    assertEquals(integers[0][i] + integers[1][i] + integers[2][i], exact[i], "fp32 stays exact");
                    assertEquals(i == 17 || i == 900, Float.isNaN(result[i]), "element " + i + ": " + result[i]);
                }
                assertEquals(3, c.planCount(), "one plan per (algorithm, count, format)");
                return null;
            });
        }
    }

    @Test
    void theParameterServerRefusesQuantizedFormats() throws Exception {
        try (Cluster cluster = Cluster.loopback(new int[]{0, 1}, LoopbackNetwork.Impairments.NONE, 1, CONFIG, b -> b)) {
            Collectives c = cluster.collectives[0];
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.allReduce(
                    MemorySegment.ofArray(new float[8]), 8, Collectives.Op.SUM, 1, Algorithm.PARAMETER_SERVER,
                    WireDtype.INT8));
            assertTrue(e.getMessage().contains("int8") && e.getMessage().contains("parameter server"),
                    e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> CONFIG.withAlgorithm(Algorithm.PARAMETER_SERVER)
                    .withWireDtype(WireDtype.INT4));
        }
    }

    /** Gaussian inputs whose scale changes from block to block, as gradients of different layers do. */
    private static float[][] inputs(int ranks, int count, long seed) {
        float[][] inputs = new float[ranks][count];
        for (int r = 0; r < ranks; r++) {
            Random random = new Random(seed * 1000 + r);
            for (int i = 0; i < count; i++) {
                inputs[r][i] = (float) (random.nextGaussian() * Math.scalb(1.0, (i / 128) % 9 - 4));
            }
        }
        return inputs;
    }

    /** One SUM all-reduce in {@code dtype}; stores the results when asked; returns the bytes all transports sent. */
    private static long run(int[] layout, Algorithm algorithm, WireDtype dtype, float[][] inputs, float[][] results,
                            LoopbackNetwork.Impairments impairments, long seed) throws Exception {
        int count = inputs[0].length;
        try (Cluster cluster = Cluster.loopback(layout, impairments, seed, CONFIG,
                b -> b.windowChunks(64).retransmitTimeouts(Duration.ofMillis(5), Duration.ofMillis(1),
                        Duration.ofMillis(100)));
             Arena arena = Arena.ofShared()) {
            MemorySegment[] buffers = new MemorySegment[layout.length];
            for (int r = 0; r < buffers.length; r++) {
                buffers[r] = Tensors.segment(arena, inputs[r]);
            }
            cluster.onAllRanksOk(LIMIT, c -> {
                c.allReduce(buffers[c.group().rank()], count, Collectives.Op.SUM, 1, algorithm, dtype);
                return null;
            });
            long bytes = 0;
            for (int r = 0; r < buffers.length; r++) {
                Tensors.assertSpareBytesUntouched(buffers[r], count);
                if (results != null) {
                    results[r] = Tensors.read(buffers[r], count);
                }
            }
            for (ReliableTransport t : cluster.transports) {
                bytes += t.stats().bytesSent();
            }
            return bytes;
        }
    }
}
