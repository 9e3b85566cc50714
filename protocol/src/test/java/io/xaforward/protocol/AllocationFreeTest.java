package io.xaforward.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

/**
 * The per-packet path (seal, encapsulate, parse, verify) allocates nothing once warmed up: measured with the
 * thread's allocated-bytes counter over many packets against a tolerance far below one object per packet.
 */
class AllocationFreeTest {
    private static final int PACKETS = 20_000;

    @Test
    void sealEncapsulateParseVerifyAllocateNothingPerPacket() {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        assertTrue(threads.isThreadAllocatedMemorySupported() && threads.isThreadAllocatedMemoryEnabled());
        long tid = Thread.currentThread().threadId();
        FrameWriter writer = new FrameWriter();
        FrameParser parser = new FrameParser();
        PayloadIntegrity integrity = new PayloadIntegrity();
        XafHeader header = new XafHeader();
        NetworkForm[] forms = NetworkForm.values();
        OuterAddressing[] addressing = new OuterAddressing[forms.length];
        for (int i = 0; i < forms.length; i++) {
            addressing[i] = Frames.addressing(forms[i]);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment frame = arena.allocate(2048);
            // Until the JIT has compiled the path, interpreted code may allocate; steady state must not. Rounds
            // are repeated (a loaded machine delays compilation) and the best round must be allocation-free.
            long best = Long.MAX_VALUE;
            for (int round = 0; round < 10 && best >= 4096; round++) {
                long before = threads.getThreadAllocatedBytes(tid);
                long ok = run(writer, parser, integrity, header, forms, addressing, frame);
                best = Math.min(best, threads.getThreadAllocatedBytes(tid) - before);
                assertEquals(2L * PACKETS, ok, "every frame parsed as XAF and verified");
            }
            assertTrue(best < 4096, best + " bytes allocated for " + PACKETS + " packets in the best round");
        }
    }

    private static long run(FrameWriter writer, FrameParser parser, PayloadIntegrity integrity, XafHeader header,
            NetworkForm[] forms, OuterAddressing[] addressing, MemorySegment frame) {
        long ok = 0;
        for (int i = 0; i < PACKETS; i++) {
            int f = i % forms.length;
            NetworkForm form = forms[f];
            header.wrap(frame, form.outerHeaderLength()).init().networkId(i).payloadLength(1000 + (i & 63));
            frame.set(java.lang.foreign.ValueLayout.JAVA_BYTE, header.payloadOffset() + (i & 511), (byte) i);
            integrity.seal(header);
            int length = writer.encapsulate(frame, form, addressing[f]);
            ParsedFrame p = parser.parse(frame, length);
            if (p.kind() == ParsedFrame.Kind.XAF && Checksums.verifyOuter(frame, p)) {
                ok++;
            }
            if (integrity.verify(header.wrap(frame, p.xafOffset()))) {
                ok++;
            }
        }
        return ok;
    }
}
