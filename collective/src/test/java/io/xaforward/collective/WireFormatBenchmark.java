package io.xaforward.collective;

import io.xaforward.transport.ChunkSink;
import io.xaforward.transport.FloatSumSink;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static io.xaforward.collective.Wire.F32;

/**
 * The per-chunk cost of each wire format at 1400-byte chunks, on native memory as in an all-reduce: the receive sink
 * of the reduce-scatter (decode and add into the float32 accumulator, on the transport's event-loop thread) and the
 * sender's encoding of the same values. A chunk holds 350 floats in fp32, 700 in bf16, 1352 in int8 and 2624 in int4,
 * so compare ns per float too (docs/bench/quantized-wire.md).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class WireFormatBenchmark {
    private static final int CHUNK = 1400;
    private static final int FLOATS = 1 << 18; // 1 MiB of float32, walked through as a reduce-scatter does

    @Param({"FP32", "BF16", "INT8", "INT4"})
    WireDtype dtype;

    private Arena arena;
    private MemorySegment source;
    private MemorySegment message;
    private MemorySegment accumulator;
    private ChunkSink sink;
    private BlockQuantizer quant;
    private int chunkFloats;
    private int chunks;
    private int next;

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofShared();
        source = arena.allocate((long) FLOATS * Float.BYTES, 64);
        accumulator = arena.allocate((long) FLOATS * Float.BYTES, 64);
        Random random = new Random(1);
        for (int i = 0; i < FLOATS; i++) {
            source.set(F32, (long) i * Float.BYTES, (float) random.nextGaussian() * 1e-3f);
        }
        switch (dtype) {
            case FP32 -> {
                chunkFloats = CHUNK / Float.BYTES;
                message = source;
                sink = FloatSumSink.INSTANCE;
            }
            case BF16 -> {
                chunkFloats = CHUNK / 2;
                message = arena.allocate((long) FLOATS * 2, 64);
                Bf16.encode(source, message, FLOATS);
                sink = Bf16.sumInto(accumulator);
            }
            default -> {
                quant = new BlockQuantizer(dtype, CHUNK);
                chunkFloats = quant.chunkFloats();
                message = arena.allocate(quant.wireBytes(FLOATS), 64);
                quant.encode(source, FLOATS, message);
                sink = quant.sumInto(accumulator, FLOATS);
            }
        }
        chunks = FLOATS / chunkFloats - 1; // whole chunks only
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    /** The reduce-scatter receive of one chunk: decode and add into float32. */
    @Benchmark
    public MemorySegment sumChunk() {
        int j = next;
        next = j + 1 == chunks ? 0 : j + 1;
        long offset = (long) j * CHUNK;
        // fp32 and bf16 sinks write at the chunk's offset in their destination, which is the accumulator's bytes.
        sink.accept(dtype == WireDtype.FP32 ? accumulator : message, offset, message, offset, CHUNK);
        return accumulator;
    }

    /** The sender's side: encoding one chunk's worth of floats. */
    @Benchmark
    public MemorySegment encodeChunk() {
        int j = next;
        next = j + 1 == chunks ? 0 : j + 1;
        MemorySegment part = Wire.floats(source, (long) j * chunkFloats, chunkFloats);
        switch (dtype) {
            case FP32 -> { } // nothing to encode: a float32 send reads the data in place
            case BF16 -> Bf16.encode(part, message.asSlice((long) j * CHUNK, CHUNK), chunkFloats);
            default -> quant.encode(part, chunkFloats, message.asSlice((long) j * CHUNK, CHUNK));
        }
        return message;
    }
}
