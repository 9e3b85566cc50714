package io.xaforward.collective;

import io.xaforward.transport.LoopbackNetwork;
import io.xaforward.transport.ReliableTransport;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * All-reduce with bf16 on the wire against a double-precision reference: within the bf16 rounding bound, bitwise
 * identical on every rank (the byte counts of both formats are printed).
 */
class Bf16AllReduceTest {
    private static final int[] LAYOUT = {0, 0, 1, 1, 2}; // 3 DCs: 2 + 2 + 1
    private static final int COUNT = 5003;

    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = {"RING", "HIERARCHICAL"})
    void meanIsWithinBf16ToleranceOfTheFloat32ReferenceAndBitwiseEqualOnAllRanks(Algorithm algorithm)
            throws Exception {
        float[][] inputs = Tensors.inputs(LAYOUT.length, COUNT, 17, false);
        long fp32Bytes = run(algorithm, WireDtype.FP32, inputs, null);
        float[][] results = new float[LAYOUT.length][];
        long bf16Bytes = run(algorithm, WireDtype.BF16, inputs, results);

        int n = LAYOUT.length;
        double worst = 0;
        for (int i = 0; i < COUNT; i++) {
            double sum = 0;
            double magnitude = 0;
            for (float[] input : inputs) {
                sum += input[i];
                magnitude += Math.abs(input[i]);
            }
            // Every value is rounded to bf16 (relative error <= 2^-9) at most once per hop it makes, n + 1 times.
            double tolerance = (n + 1) * Math.scalb(1.0, -9) * magnitude / n;
            double error = Math.abs(results[0][i] - sum / n);
            worst = Math.max(worst, error / magnitude);
            assertTrue(error <= tolerance, "element " + i + ": " + results[0][i] + " vs " + sum / n);
            for (int r = 1; r < n; r++) {
                assertEquals(Float.floatToRawIntBits(results[0][i]), Float.floatToRawIntBits(results[r][i]),
                        "rank " + r + " element " + i + " differs from rank 0");
            }
        }
        assertTrue(worst > 0, "bf16 must actually round something");
        // Payloads halve; headers, acknowledgements and retransmissions (chunks that arrive before a slower rank has
        // posted its receive are resent) do not, and the last vary from run to run: reported, not asserted.
        System.out.printf("%s: bf16 sent %d bytes, fp32 %d bytes (%.2f)%n", algorithm, bf16Bytes, fp32Bytes,
                (double) bf16Bytes / fp32Bytes);
    }

    /** Runs one MEAN all-reduce; stores the results when asked; returns the bytes all transports sent. */
    private static long run(Algorithm algorithm, WireDtype wire, float[][] inputs, float[][] results)
            throws Exception {
        CollectiveConfig config = new CollectiveConfig(4096, algorithm, Duration.ofSeconds(20)).withWireDtype(wire);
        try (Cluster cluster = Cluster.loopback(LAYOUT, LoopbackNetwork.Impairments.NONE, 1, config, b -> b);
             Arena arena = Arena.ofShared()) {
            MemorySegment[] buffers = new MemorySegment[LAYOUT.length];
            for (int r = 0; r < buffers.length; r++) {
                buffers[r] = Tensors.segment(arena, inputs[r]);
            }
            cluster.onAllRanksOk(Duration.ofSeconds(30), c -> {
                c.allReduce(buffers[c.group().rank()], COUNT, Collectives.Op.MEAN, 1);
                return null;
            });
            long bytes = 0;
            for (int r = 0; r < buffers.length; r++) {
                Tensors.assertSpareBytesUntouched(buffers[r], COUNT);
                if (results != null) {
                    results[r] = Tensors.read(buffers[r], COUNT);
                }
            }
            for (ReliableTransport t : cluster.transports) {
                bytes += t.stats().bytesSent();
            }
            return bytes;
        }
    }

    /**
     * Over a network that loses, duplicates, reorders and corrupts datagrams: small integers (every partial sum fits
     * bf16's 8 significant bits) must sum exactly, so each chunk was added exactly once.
     */
    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = {"RING", "HIERARCHICAL"})
    void smallIntegerSumsStayExactOnALossyNetwork(Algorithm algorithm) throws Exception {
        int count = 20_011;
        CollectiveConfig config = new CollectiveConfig(16 << 10, algorithm, Duration.ofSeconds(30))
                .withWireDtype(WireDtype.BF16);
        var impairments = new LoopbackNetwork.Impairments(0.10, 0.10, 0.10, 0.01);
        try (Cluster cluster = Cluster.loopback(LAYOUT, impairments, 91 + algorithm.ordinal(), config,
                b -> b.windowChunks(64).retransmitTimeouts(Duration.ofMillis(5), Duration.ofMillis(1),
                        Duration.ofMillis(100)));
             Arena arena = Arena.ofShared()) {
            int n = cluster.size();
            for (int step = 1; step <= 2; step++) {
                java.util.Random random = new java.util.Random(step);
                float[][] inputs = new float[n][count];
                for (int r = 0; r < n; r++) {
                    for (int i = 0; i < count; i++) {
                        inputs[r][i] = random.nextInt(31) - 15;
                    }
                }
                float[][] results = cluster.allReduceSum(arena, inputs, step, Duration.ofSeconds(60));
                Tensors.assertAllReduced(inputs, results, false, true);
            }
            assertTrue(cluster.network.lost() > 0 && cluster.network.duplicated() > 0, "the network must misbehave");
        }
    }

    @org.junit.jupiter.api.Test
    void parameterServerRefusesBf16WithAClearError() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new CollectiveConfig(4096,
                Algorithm.PARAMETER_SERVER, Duration.ofSeconds(1), WireDtype.BF16));
        assertTrue(e.getMessage().contains("parameter server"), e.getMessage());
        assertEquals(WireDtype.BF16, WireDtype.fromName("BFloat16"));
        assertEquals(WireDtype.FP32, WireDtype.fromName("f32"));
        assertEquals(WireDtype.FP32, WireDtype.fromName("float32"));
    }
}
