package io.xaforward.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

class FrameWriterTest {
    private final FrameWriter writer = new FrameWriter();

    @Test
    void addressesOfTheWrongFamilyAreRejectedWithAClearMessage() {
        MemorySegment frame = MemorySegment.ofArray(new byte[200]);
        new XafHeader().wrap(frame, NetworkForm.IPV6.outerHeaderLength()).init();
        var e = assertThrows(IllegalArgumentException.class,
                () -> writer.encapsulate(frame, NetworkForm.IPV6, Frames.addressing(NetworkForm.IPV4)));
        assertTrue(e.getMessage().contains("IPV6 form needs 16-byte"), e.getMessage());
        MemorySegment frame4 = MemorySegment.ofArray(new byte[200]);
        new XafHeader().wrap(frame4, NetworkForm.IPV4.outerHeaderLength()).init();
        assertThrows(IllegalArgumentException.class,
                () -> writer.encapsulate(frame4, NetworkForm.IPV4, new OuterAddressing()));
    }

    @Test
    void idFormNeedsNoIpAddresses() {
        MemorySegment frame = MemorySegment.ofArray(new byte[100]);
        new XafHeader().wrap(frame, NetworkForm.ID.outerHeaderLength()).init();
        assertEquals(26 + 48, writer.encapsulate(frame, NetworkForm.ID, new OuterAddressing().dstId(5)));
    }

    @Test
    void payloadLengthBeyondTheBufferOrTheFormIsRejected() {
        MemorySegment small = MemorySegment.ofArray(new byte[42 + 48 + 10]);
        new XafHeader().wrap(small, 42).init().payloadLength(11);
        var e = assertThrows(IllegalArgumentException.class,
                () -> writer.encapsulate(small, NetworkForm.IPV4, Frames.addressing(NetworkForm.IPV4)));
        assertTrue(e.getMessage().contains("shorter"), e.getMessage());

        MemorySegment big = MemorySegment.ofArray(new byte[70000]);
        new XafHeader().wrap(big, 42).init().payloadLength(NetworkForm.IPV4.maxPayload() + 1);
        e = assertThrows(IllegalArgumentException.class,
                () -> writer.encapsulate(big, NetworkForm.IPV4, Frames.addressing(NetworkForm.IPV4)));
        assertTrue(e.getMessage().contains("exceeds"), e.getMessage());

        assertThrows(IllegalArgumentException.class, () -> writer.encapsulate(MemorySegment.ofArray(new byte[60]),
                NetworkForm.IPV6, Frames.addressing(NetworkForm.IPV6)));
    }

    @Test
    void largestIpv4PayloadStillProducesAValidFrame() {
        int payload = NetworkForm.IPV4.maxPayload();
        byte[] buf = new byte[42 + 48 + payload];
        new java.util.Random(1).nextBytes(buf);
        MemorySegment frame = MemorySegment.ofArray(buf);
        XafHeader h = new XafHeader().wrap(frame, 42).init().payloadLength(payload);
        new PayloadIntegrity().seal(h);
        int length = writer.encapsulate(frame, NetworkForm.IPV4, Frames.addressing(NetworkForm.IPV4));
        assertEquals(14 + 0xFFFF, length);
        ParsedFrame p = new FrameParser().parse(frame, length);
        assertEquals(ParsedFrame.Kind.XAF, p.kind());
        assertTrue(Naive.udpChecksumValid(buf, false));
        assertTrue(Naive.ipv4HeaderChecksumValid(buf));
    }

    @Test
    void unsealedPayloadSumShowsUpAsABadUdpChecksum() {
        byte[] buf = new byte[42 + 48 + 4];
        MemorySegment frame = MemorySegment.ofArray(buf);
        XafHeader h = new XafHeader().wrap(frame, 42).init().payloadLength(4);
        buf[42 + 48] = 1; // payload 01 00 00 00, header still says payload_sum 0
        writer.encapsulate(frame, NetworkForm.IPV4, Frames.addressing(NetworkForm.IPV4));
        ParsedFrame p = new FrameParser().parse(frame, buf.length);
        assertTrue(!Checksums.verifyUdp(frame, p));
        new PayloadIntegrity().seal(h);
        writer.encapsulate(frame, NetworkForm.IPV4, Frames.addressing(NetworkForm.IPV4));
        assertTrue(Checksums.verifyUdp(frame, new FrameParser().parse(frame, buf.length)));
    }

    @Test
    void checksumHelpersRejectFramesTheyDoNotApplyTo() {
        byte[] id = Naive.hex(GoldenFramesTest.ID);
        MemorySegment seg = MemorySegment.ofArray(id);
        ParsedFrame p = new FrameParser().parse(seg, id.length);
        assertThrows(IllegalArgumentException.class, () -> Checksums.verifyUdp(seg, p));
        assertThrows(IllegalArgumentException.class, () -> Checksums.verifyIpv4Header(seg, p));
        assertTrue(Checksums.verifyOuter(seg, p));
        ParsedFrame notXaf = new FrameParser().parse(MemorySegment.ofArray(new byte[60]), 60);
        assertThrows(IllegalArgumentException.class, () -> Checksums.verifyOuter(seg, notXaf));
    }
}
