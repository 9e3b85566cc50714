package io.xaforward.collective;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.MemorySegment;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The int8 and int4 wire formats on their own: the per-element error bound, the edge cases (all-zero, non-finite,
 * tiny and huge blocks, a last partial block), chunks that decode on their own in any order, and the size on the wire.
 */
class BlockQuantizerTest {
    /** Rounding to the level (half a scale) plus the float32 product q * s (at most 2^-24 * 127 scales). */
    private static final double BOUND = 0.5 + Math.scalb(1.0, -17);

    @ParameterizedTest
    @CsvSource({"INT8, 1400", "INT8, 1376", "INT8, 8904", "INT8, 64", "INT4, 1400", "INT4, 1376", "INT4, 8904",
            "INT4, 40"})
    void everyValueIsWithinHalfAScaleOfItsDecodedValue(WireDtype dtype, int chunkBytes) {
        BlockQuantizer q = new BlockQuantizer(dtype, chunkBytes);
        Random random = new Random(chunkBytes);
        int n = 20_000 + random.nextInt(1000); // a last partial block, and blocks cut by chunk boundaries
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            // Magnitudes vary from block to block by up to 2^40 either way, as gradients of different layers do.
            float blockMagnitude = (float) Math.scalb(1.0, (i / dtype.blockFloats() * 7919) % 81 - 40);
            x[i] = (float) random.nextGaussian() * blockMagnitude;
        }
        float[] decoded = roundTrip(q, x);
        double worst = 0;
        for (int i = 0; i < n; i++) {
            int lo = i / dtype.blockFloats() * dtype.blockFloats();
            float s = BlockQuantizer.scale(MemorySegment.ofArray(x), lo, Math.min(dtype.blockFloats(), n - lo),
                    dtype.maxLevel());
            double error = Math.abs((double) x[i] - decoded[i]);
            assertTrue(error <= s * BOUND, "element " + i + ": " + x[i] + " decoded as " + decoded[i] + ", scale " + s);
            worst = Math.max(worst, error / s);
        }
        assertTrue(worst > 0.4, "rounding must actually happen, worst error " + worst + " scales");
        float[] inPlace = x.clone();
        BlockQuantizer.roundInPlace(MemorySegment.ofArray(inPlace), n, dtype);
        for (int i = 0; i < n; i++) {
            assertEquals(Float.floatToRawIntBits(decoded[i]), Float.floatToRawIntBits(inPlace[i]),
                    "roundInPlace must give the receivers' bits at " + i);
        }
    }

    @Test
    void bf16KeepsItsRelativeBoundOfHalfAnUlpBesideTheBlockFormats() { // 8 significant bits: ulp 2^-7
        Random random = new Random(5);
        for (int i = 0; i < 100_000; i++) {
            float x = (float) (random.nextGaussian() * Math.scalb(1.0, random.nextInt(200) - 100));
            assertTrue(Math.abs((double) x - Bf16.round(x)) <= Math.scalb(1.0, -8) * Math.abs(x), "bf16 at " + x);
        }
    }

    @ParameterizedTest
    @EnumSource(value = WireDtype.class, names = {"INT8", "INT4"})
    void sizeOnTheWireIsAboutOnePlusAScalePerBlock(WireDtype dtype) {
        BlockQuantizer q = new BlockQuantizer(dtype, 1400);
        long n = 1_000_000;
        double perFloat = (double) q.wireBytes(n) / n;
        double ideal = dtype.valueBits() / 8.0 + 4.0 / dtype.blockFloats();
        assertTrue(perFloat >= ideal && perFloat <= ideal + 0.01, dtype + ": " + perFloat + " bytes per float");
        System.out.printf("%s at 1400-byte chunks: %.4f bytes per float (%d floats per chunk)%n", dtype, perFloat,
                q.chunkFloats());
    }

    @ParameterizedTest
    @EnumSource(value = WireDtype.class, names = {"INT8", "INT4"})
    void allZeroBlocksDecodeToZeroAndTinyOrHugeBlocksKeepTheBound(WireDtype dtype) {
        int b = dtype.blockFloats();
        float[] x = new float[4 * b];
        for (int i = 0; i < b; i++) {
            x[b + i] = (i % 3 - 1) * Float.MIN_VALUE * (i % 7);          // subnormal: the scale must not be 0
            x[2 * b + i] = (i % 2 == 0 ? 1 : -1) * Float.MAX_VALUE / (1 + i); // huge, no overflow
            x[3 * b + i] = i == 5 ? -0f : 0f;
        }
        float[] decoded = roundTrip(new BlockQuantizer(dtype, 1400), x);
        for (int i = 0; i < x.length; i++) {
            int lo = i / b * b;
            float s = BlockQuantizer.scale(MemorySegment.ofArray(x), lo, b, dtype.maxLevel());
            assertTrue(Float.isFinite(decoded[i]), "element " + i + " decoded as " + decoded[i]);
            assertTrue(Math.abs((double) x[i] - decoded[i]) <= s * BOUND + Float.MIN_VALUE,
                    "element " + i + ": " + x[i] + " decoded as " + decoded[i]);
            if (i < b || i >= 3 * b) {
                assertEquals(0f, decoded[i], "all-zero blocks decode to zero");
                assertEquals(0f, s);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = WireDtype.class, names = {"INT8", "INT4"})
    void nonFiniteValuesDecodeToNanAndLeaveTheirBlockAlone(WireDtype dtype) {
        int b = dtype.blockFloats();
        float[] x = new float[b + 10];
        for (int i = 0; i < x.length; i++) {
            x[i] = (i - 40) / 16f;
        }
        x[3] = Float.NaN;
        x[7] = Float.POSITIVE_INFINITY;
        x[b + 2] = Float.NEGATIVE_INFINITY; // in the last, partial block
        float[] decoded = roundTrip(new BlockQuantizer(dtype, 1400), x);
        float finiteMax = (b - 1 - 40) / 16f;
        float s = finiteMax / dtype.maxLevel();
        for (int i = 0; i < x.length; i++) {
            if (!Float.isFinite(x[i])) {
                assertTrue(Float.isNaN(decoded[i]), "element " + i + " was " + x[i] + ", decoded " + decoded[i]);
            } else if (i < b) {
                // The scale comes from the finite values only, so the block keeps its precision.
                assertTrue(Math.abs(x[i] - decoded[i]) <= s * BOUND * 1.0001, "element " + i + ": " + decoded[i]);
            } else {
                assertTrue(Float.isFinite(decoded[i]), "element " + i);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = WireDtype.class, names = {"INT8", "INT4"})
    void chunksDecodeOnTheirOwnInAnyOrder(WireDtype dtype) {
        BlockQuantizer q = new BlockQuantizer(dtype, 1400);
        int n = 7 * q.chunkFloats() + 333;
        float[] x = new float[n];
        Random random = new Random(2);
        for (int i = 0; i < n; i++) {
            x[i] = random.nextFloat() - 0.5f;
        }
        MemorySegment message = MemorySegment.ofArray(new byte[(int) q.wireBytes(n)]);
        q.encode(MemorySegment.ofArray(x), n, message);
        float[] inOrder = new float[n];
        q.decode(message, n, MemorySegment.ofArray(inOrder));
        float[] backwards = new float[n];
        float[] summed = new float[n];
        java.util.Arrays.fill(summed, 1f);
        MemorySegment kept = MemorySegment.ofArray(new byte[(int) message.byteSize()]);
        var store = q.decodeInto(MemorySegment.ofArray(backwards), n, true);
        var add = q.sumInto(MemorySegment.ofArray(summed), n);
        for (long offset = (message.byteSize() - 1) / 1400 * 1400; offset >= 0; offset -= 1400) {
            int length = (int) Math.min(1400, message.byteSize() - offset);
            store.accept(kept, offset, message, offset, length);
            add.accept(kept, offset, message, offset, length);
        }
        for (int i = 0; i < n; i++) {
            assertEquals(inOrder[i], backwards[i], "element " + i);
            assertEquals(1f + inOrder[i], summed[i], "element " + i);
        }
        assertEquals(-1, message.mismatch(kept), "the kept bytes are the message");
    }

    @Test
    void aChunkOfTheWrongLengthOrPlaceIsRefused() {
        BlockQuantizer q = new BlockQuantizer(WireDtype.INT8, 1400);
        int n = 3000;
        MemorySegment message = MemorySegment.ofArray(new byte[(int) q.wireBytes(n)]);
        float[] target = new float[n];
        var sink = q.sumInto(MemorySegment.ofArray(target), n);
        assertThrows(IllegalArgumentException.class, () -> sink.accept(message, 0, message, 0, 1396));
        assertThrows(IllegalArgumentException.class, () -> sink.accept(message, 4, message, 0, 1400));
        assertThrows(IllegalArgumentException.class, () -> sink.accept(message, 1400 * 3, message, 0, 100));
        IllegalArgumentException tiny = assertThrows(IllegalArgumentException.class,
                () -> new BlockQuantizer(WireDtype.INT4, 8));
        assertTrue(tiny.getMessage().contains("8-byte chunks"), tiny.getMessage());
    }

    /** The byte layout of docs/PROTOCOL.md §3, pinned: scale (float32 LE), then levels; int4 even value low. */
    @Test
    void goldenBytes() {
        MemorySegment int8 = MemorySegment.ofArray(new byte[6]);
        new BlockQuantizer(WireDtype.INT8, 1400).encode(MemorySegment.ofArray(new float[]{1f, -0.25f}), 2, int8);
        assertTrue((double) (1f / 127) * 127 < 1, "float 1/127 is rounded down, so the scale is one ulp above it");
        assertEquals(Float.floatToRawIntBits(Math.nextUp(1f / 127)), int8.get(java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED
                .withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), 0));
        assertEquals(0x7f, int8.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 4) & 0xff, "level 127");
        assertEquals(0xe0, int8.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 5) & 0xff, "level -32");

        MemorySegment int4 = MemorySegment.ofArray(new byte[6]);
        new BlockQuantizer(WireDtype.INT4, 1400).encode(MemorySegment.ofArray(new float[]{1f, -1f, 0.25f}), 3,
                int4);
        assertEquals(Float.floatToRawIntBits(1f / 7), int4.get(java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED
                .withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), 0));
        assertEquals(0x97, int4.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 4) & 0xff, "7 low, -7 high");
        assertEquals(0x02, int4.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 5) & 0xff, "2 low, 0 high");
        assertEquals(6, new BlockQuantizer(WireDtype.INT4, 1400).wireBytes(3));
    }

    @Test
    void partsAreCutInWholeBlocksAndBalanced() {
        for (int len : new int[]{0, 1, 127, 128, 300, 1000, 16384, 40_003}) {
            for (int parts = 1; parts <= 7; parts++) {
                assertEquals(0, Wire.partStart(len, parts, 0, 128));
                assertEquals(len, Wire.partStart(len, parts, parts, 128));
                int blocks = (len + 127) / 128;
                for (int i = 0; i < parts; i++) {
                    assertEquals(Wire.partStart(len, parts, i), Wire.partStart(len, parts, i, 1), "unit 1 is the old cut");
                    int from = Wire.partStart(len, parts, i, 128);
                    int to = Wire.partStart(len, parts, i + 1, 128);
                    assertTrue(from % 128 == 0 && from <= to, len + "/" + parts + " part " + i + ": " + from);
                    int partBlocks = (to - from + 127) / 128;
                    assertTrue(partBlocks == blocks / parts || partBlocks == blocks / parts + 1,
                            len + "/" + parts + " part " + i + " has " + partBlocks + " blocks");
                }
            }
        }
    }

    @Test
    void wireNamesAndHeaderCodes() {
        assertEquals(WireDtype.INT8, WireDtype.fromName("int8"));
        assertEquals(WireDtype.INT4, WireDtype.fromName(" INT4 "));
        assertEquals(WireDtype.INT4, WireDtype.fromName("i4"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> WireDtype.fromName("int2"));
        assertTrue(e.getMessage().contains("fp32, bf16, int8, int4"), e.getMessage());
        assertEquals(6, WireDtype.INT8.elementType().code());
        assertEquals(7, WireDtype.INT4.elementType().code());
        assertEquals(127, WireDtype.INT8.maxLevel());
        assertEquals(7, WireDtype.INT4.maxLevel());
    }

    private static float[] roundTrip(BlockQuantizer q, float[] x) {
        MemorySegment message = MemorySegment.ofArray(new byte[(int) q.wireBytes(x.length)]);
        q.encode(MemorySegment.ofArray(x), x.length, message);
        float[] decoded = new float[x.length];
        q.decode(message, x.length, MemorySegment.ofArray(decoded));
        return decoded;
    }
}
