package io.xaforward.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/** Frames of every form built by {@link FrameWriter} parse back and pass checksums computed independently. */
class FrameRoundTripPropertyTest {
    private final FrameWriter writer = new FrameWriter();
    private final FrameParser parser = new FrameParser();
    private final PayloadIntegrity integrity = new PayloadIntegrity();

    @Property(tries = 400)
    void builtFramesParseBackWithTheSameFieldsAndValidChecksums(
            @ForAll NetworkForm form, @ForAll @Size(max = 1600) byte[] payload,
            @ForAll int networkId, @ForAll int jobToken, @ForAll int step, @ForAll int chunkIndex,
            @ForAll @IntRange(max = 0xFFFF) int srcRank, @ForAll @IntRange(min = 1, max = 255) int xafHops,
            @ForAll @IntRange(min = 1, max = 255) int ipHops, @ForAll @IntRange(max = 0xFFFF) int srcPort,
            @ForAll int srcId, @ForAll long addressSeed, @ForAll @IntRange(max = 64) int slack) {
        Random rnd = new Random(addressSeed);
        byte[] srcMac = new byte[6], dstMac = new byte[6];
        rnd.nextBytes(srcMac);
        rnd.nextBytes(dstMac);
        byte[] srcIp = new byte[form == NetworkForm.IPV6 ? 16 : 4], dstIp = new byte[srcIp.length];
        rnd.nextBytes(srcIp);
        rnd.nextBytes(dstIp);
        OuterAddressing a = new OuterAddressing().srcMac(srcMac).dstMac(dstMac).srcIp(srcIp).dstIp(dstIp)
                .srcPort(srcPort).srcId(srcId).dstId(networkId).ipHopLimit(ipHops);

        byte[] buf = new byte[form.outerHeaderLength() + 48 + payload.length + slack];
        rnd.nextBytes(buf); // garbage everywhere: the writer must overwrite every outer byte it owns
        MemorySegment seg = MemorySegment.ofArray(buf);
        XafHeader h = new XafHeader().wrap(seg, form.outerHeaderLength()).init()
                .type(MessageType.DATA.code()).hopLimit(xafHops).networkId(networkId).jobToken(jobToken)
                .step(step).chunkIndex(chunkIndex).srcRank(srcRank).payloadLength(payload.length);
        MemorySegment.copy(payload, 0, seg, ValueLayout.JAVA_BYTE, h.payloadOffset(), payload.length);
        integrity.seal(h);
        int length = writer.encapsulate(seg, form, a);
        assertEquals(form.outerHeaderLength() + 48 + payload.length, length);

        ParsedFrame p = parser.parse(seg, length + slack);
        assertEquals(ParsedFrame.Kind.XAF, p.kind(), p::toString);
        assertEquals(form, p.form());
        assertEquals(payload.length, p.payloadLength());
        assertEquals(length, p.frameLength());
        XafHeader r = new XafHeader().wrap(seg, p.xafOffset());
        assertEquals(networkId, r.networkId());
        assertEquals(jobToken, r.jobToken());
        assertEquals(step, r.step());
        assertEquals(chunkIndex, r.chunkIndex());
        assertEquals(srcRank, r.srcRank());
        assertEquals(xafHops, r.hopLimit());
        assertArrayEquals(payload, Arrays.copyOfRange(buf, (int) p.payloadOffset(), length));
        assertTrue(integrity.verify(r));
        assertEquals(Naive.crc32c(payload, 0, payload.length), r.payloadCrc32c());

        assertArrayEquals(dstMac, Arrays.copyOfRange(buf, 0, 6));
        assertArrayEquals(srcMac, Arrays.copyOfRange(buf, 6, 12));
        switch (form) {
            case IPV4 -> {
                assertEquals(0x0800, Naive.u16(buf, 12));
                assertArrayEquals(srcIp, Arrays.copyOfRange(buf, 26, 30));
                assertArrayEquals(dstIp, Arrays.copyOfRange(buf, 30, 34));
                assertEquals(ipHops, buf[22] & 0xFF);
                assertEquals(srcPort, Naive.u16(buf, 34));
                assertEquals(9450, Naive.u16(buf, 36));
                assertTrue(Naive.ipv4HeaderChecksumValid(buf), "IPv4 header checksum");
                assertTrue(Naive.udpChecksumValid(buf, false), "UDP checksum over IPv4");
            }
            case IPV6 -> {
                assertEquals(0x86DD, Naive.u16(buf, 12));
                assertArrayEquals(srcIp, Arrays.copyOfRange(buf, 22, 38));
                assertArrayEquals(dstIp, Arrays.copyOfRange(buf, 38, 54));
                assertEquals(ipHops, buf[21] & 0xFF);
                assertEquals(srcPort, Naive.u16(buf, 54));
                assertTrue(Naive.udpChecksumValid(buf, true), "UDP checksum over IPv6");
            }
            case ID -> {
                assertEquals(0x0812, Naive.u16(buf, 12));
                assertEquals(Integer.toUnsignedLong(srcId), Naive.u32(buf, 14));
                assertEquals(Integer.toUnsignedLong(networkId), Naive.u32(buf, 18));
                assertEquals(0xFD, buf[22] & 0xFF);
                assertEquals(0, buf[23]);
                assertEquals(48 + payload.length, Naive.u16(buf, 24));
            }
        }
        assertTrue(Checksums.verifyOuter(seg, p));
    }

    @Property(tries = 200)
    void aCorruptedPayloadByteFailsTheFullUdpCheck(@ForAll @Size(min = 1, max = 400) byte[] payload,
            @ForAll @IntRange(max = 399) int at, @ForAll @IntRange(min = 1, max = 255) int flip,
            @ForAll boolean ipv6) {
        NetworkForm form = ipv6 ? NetworkForm.IPV6 : NetworkForm.IPV4;
        byte[] buf = new byte[form.outerHeaderLength() + 48 + payload.length];
        MemorySegment seg = MemorySegment.ofArray(buf);
        XafHeader h = new XafHeader().wrap(seg, form.outerHeaderLength()).init().payloadLength(payload.length);
        MemorySegment.copy(payload, 0, seg, ValueLayout.JAVA_BYTE, h.payloadOffset(), payload.length);
        integrity.seal(h);
        int length = writer.encapsulate(seg, form, Frames.addressing(form));
        buf[(int) h.payloadOffset() + at % payload.length] ^= (byte) flip;
        ParsedFrame p = parser.parse(seg, length);
        assertEquals(ParsedFrame.Kind.XAF, p.kind());
        assertEquals(Naive.udpChecksumValid(buf, ipv6), Checksums.verifyUdp(seg, p));
        assertTrue(!Checksums.verifyUdp(seg, p), "a single changed byte changes the sum");
    }
}
