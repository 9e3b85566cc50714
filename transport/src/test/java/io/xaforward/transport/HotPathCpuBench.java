package io.xaforward.transport;

import io.xaforward.protocol.InternetChecksum;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;

/**
 * CPU time per datagram of the hot path's pieces, candidates interleaved ({@link CpuTimeBench}):
 * {@code java -cp ... io.xaforward.transport.HotPathCpuBench} (docs/bench/endpoint-cost.md).
 */
public final class HotPathCpuBench {
    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 15;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment area = arena.allocate(1 << 16, 64);
            byte[] random = new byte[1 << 16];
            new Random(1).nextBytes(random);
            MemorySegment.copy(MemorySegment.ofArray(random), 0, area, 0, random.length);
            MemorySegment floats = arena.allocate(1 << 16, 64);
            for (long i = 0; i + 4 <= floats.byteSize(); i += 4) floats.set(ValueLayout.JAVA_FLOAT_UNALIGNED, i, 1e-6f * i);
            MemorySegment accumulator = arena.allocate(1 << 20, 64);
            long[] dest = {0};
            int payload = 1400;
            long at = 48 + 1448;
            new CpuTimeBench()
                    .add("sum before (ef5e9d5)", () -> PayloadSumBenchmark.before(area, at, payload))
                    .add("sum InternetChecksum.sum", () -> InternetChecksum.sum(area, at, payload))
                    .add("reduce FloatSumSink", () -> {
                        long d = dest[0];
                        dest[0] = d + 2L * payload > accumulator.byteSize() ? 0 : d + payload;
                        FloatSumSink.INSTANCE.accept(accumulator, d, floats, at, payload);
                        return d;
                    })
                    .add("reduce unrolled", () -> {
                        long d = dest[0];
                        dest[0] = d + 2L * payload > accumulator.byteSize() ? 0 : d + payload;
                        FloatSumBenchmark.unrolled(accumulator, d, floats, at, payload);
                        return d;
                    })
                    .run(rounds, 20_000);
        }
    }
}
