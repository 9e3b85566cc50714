package io.xaforward.transport;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class FloatSumSinkTest {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @Test
    void addsChunkIntoDestinationAtItsOffset() {
        MemorySegment dest = Arena.ofAuto().allocate(40);
        MemorySegment payload = Arena.ofAuto().allocate(64);
        for (int i = 0; i < 10; i++) {
            dest.set(F, 4L * i, i);
        }
        for (int i = 0; i < 4; i++) {
            payload.set(F, 8 + 4L * i, 0.5f * (i + 1));
        }
        FloatSumSink.INSTANCE.accept(dest, 12, payload, 8, 16);
        float[] expected = {0, 1, 2, 3.5f, 5f, 6.5f, 8f, 7, 8, 9};
        for (int i = 0; i < 10; i++) {
            assertEquals(expected[i], dest.get(F, 4L * i), "element " + i);
        }
    }

    @Test
    void rejectsPartialFloats() {
        MemorySegment s = Arena.ofAuto().allocate(16);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> FloatSumSink.INSTANCE.accept(s, 0, s, 0, 6));
        assertEquals("float chunk at offset 0 with 6 bytes is not a whole number of floats", e.getMessage());
    }

    @Test
    void reducesAMultiChunkMessageStraightFromTheReceiveBuffer() throws Exception {
        int floats = 10_001; // 40004 bytes: 29 chunks, the last one short
        try (TransportPair pair = new TransportPair(new LoopbackNetwork.Impairments(0.05, 0.05, 0.05, 0), 3,
                b -> b.retransmitTimeouts(java.time.Duration.ofMillis(5), java.time.Duration.ofMillis(1),
                        java.time.Duration.ofMillis(100)))) {
            MemorySegment sent = Arena.ofAuto().allocate(4L * floats);
            MemorySegment accumulator = Arena.ofAuto().allocate(4L * floats);
            for (int i = 0; i < floats; i++) {
                sent.set(F, 4L * i, i * 0.25f);
                accumulator.set(F, 4L * i, 1000f - i);
            }
            var received = pair.rank1.expect(0, TransportPair.id(3, 1), accumulator, FloatSumSink.INSTANCE);
            pair.rank0.send(1, TransportPair.id(3, 1), sent, 1).get(10, TimeUnit.SECONDS);
            received.get(10, TimeUnit.SECONDS);
            for (int i = 0; i < floats; i++) {
                assertEquals((1000f - i) + i * 0.25f, accumulator.get(F, 4L * i), "element " + i);
            }
        }
    }
}
