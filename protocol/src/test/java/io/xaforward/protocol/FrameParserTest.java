package io.xaforward.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Classification rules: one case per malformation reason and the non-XAF frames a gateway must pass. */
class FrameParserTest {
    private final FrameParser parser = new FrameParser();

    private static byte[] golden(NetworkForm form) { return Naive.hex(GoldenFramesTest.golden(form)); }

    private ParsedFrame parse(byte[] frame) { return parser.parse(MemorySegment.ofArray(frame), frame.length); }

    private static void put16(byte[] f, int off, int v) {
        f[off] = (byte) (v >> 8);
        f[off + 1] = (byte) v;
    }

    private void assertMalformed(Malformation expected, NetworkForm form, byte[] frame) {
        ParsedFrame p = parse(frame);
        assertEquals(ParsedFrame.Kind.MALFORMED, p.kind(), p::toString);
        assertEquals(expected, p.malformation());
        assertEquals(expected.reason(), p.reason());
        assertEquals(form, p.form());
    }

    private void assertNotXaf(byte[] frame) {
        ParsedFrame p = parse(frame);
        assertEquals(ParsedFrame.Kind.NOT_XAF, p.kind(), p::toString);
        assertNull(p.form());
        assertNull(p.malformation());
    }

    // ---- malformed, one reason at a time --------------------------------------------------------------------

    @Test
    void ipv4OptionsOnPort9450AreMalformed() {
        byte[] g = golden(NetworkForm.IPV4);
        byte[] f = new byte[g.length + 4];
        System.arraycopy(g, 0, f, 0, 34);
        Arrays.fill(f, 34, 38, (byte) 1); // four NOP options
        System.arraycopy(g, 34, f, 38, g.length - 34);
        f[14] = 0x46;
        put16(f, 16, Naive.u16(g, 16) + 4);
        assertMalformed(Malformation.IPV4_OPTIONS, NetworkForm.IPV4, f);
    }

    @Test
    void firstFragmentIsMalformedButLaterFragmentsAreNotXaf() {
        byte[] f = golden(NetworkForm.IPV4);
        put16(f, 20, 0x2000);
        assertMalformed(Malformation.IPV4_FRAGMENT, NetworkForm.IPV4, f);
        put16(f, 20, 0x0010); // offset 128 bytes: no UDP header here, cannot be identified
        assertNotXaf(f);
    }

    @Test
    void ipLengthSmallerThanItsHeadersIsMalformed() {
        byte[] f4 = golden(NetworkForm.IPV4);
        put16(f4, 16, 27);
        assertMalformed(Malformation.IP_LENGTH, NetworkForm.IPV4, f4);
        byte[] f6 = golden(NetworkForm.IPV6);
        put16(f6, 18, 7);
        assertMalformed(Malformation.IP_LENGTH, NetworkForm.IPV6, f6);
    }

    @ParameterizedTest
    @EnumSource(NetworkForm.class)
    void frameShorterThanAnnouncedIsTruncated(NetworkForm form) {
        byte[] g = golden(form);
        assertMalformed(Malformation.TRUNCATED, form, Arrays.copyOf(g, g.length - 1));
        assertMalformed(Malformation.TRUNCATED, form, Arrays.copyOf(g, form.outerHeaderLength() + 10));
    }

    @Test
    void outerLengthTooShortForAnXafHeaderIsTruncated() {
        byte[] f = golden(NetworkForm.ID);
        put16(f, 24, 47);
        assertMalformed(Malformation.TRUNCATED, NetworkForm.ID, f);
        byte[] f4 = golden(NetworkForm.IPV4);
        put16(f4, 16, 20 + 8 + 40);
        put16(f4, 38, 8 + 40);
        assertMalformed(Malformation.TRUNCATED, NetworkForm.IPV4, f4);
    }

    @Test
    void udpLengthDisagreeingWithIpLengthIsMalformed() {
        byte[] f4 = golden(NetworkForm.IPV4);
        put16(f4, 38, Naive.u16(f4, 38) - 2);
        assertMalformed(Malformation.UDP_LENGTH, NetworkForm.IPV4, f4);
        byte[] f6 = golden(NetworkForm.IPV6);
        put16(f6, 58, Naive.u16(f6, 58) + 2);
        assertMalformed(Malformation.UDP_LENGTH, NetworkForm.IPV6, f6);
    }

    @ParameterizedTest
    @EnumSource(NetworkForm.class)
    void badXafHeaderFieldsAreMalformedInEveryForm(NetworkForm form) {
        int x = form.outerHeaderLength();
        byte[] f = golden(form);
        f[x] = 'Y';
        assertMalformed(Malformation.BAD_MAGIC, form, f);
        f = golden(form);
        f[x + 2] = 2;
        assertMalformed(Malformation.UNSUPPORTED_VERSION, form, f);
        f = golden(form);
        f[x + 2] = 0;
        assertMalformed(Malformation.UNSUPPORTED_VERSION, form, f);
        f = golden(form);
        f[x + 6] = 52;
        assertMalformed(Malformation.BAD_HEADER_LENGTH, form, f);
        f = golden(form);
        put16(f, x + 40, 8);
        assertMalformed(Malformation.PAYLOAD_LENGTH, form, f);
        f = golden(form);
        put16(f, x + 40, 10);
        assertMalformed(Malformation.PAYLOAD_LENGTH, form, f);
    }

    @Test
    void everyMalformationHasADistinctReason() {
        assertEquals(Malformation.values().length,
                Arrays.stream(Malformation.values()).map(Malformation::reason).distinct().count());
    }

    // ---- not XAF: passed to the kernel untouched ------------------------------------------------------------

    @Test
    void arpIsNotXaf() {
        byte[] arp = Naive.hex("ffffffffffff020000000001" + "0806"
                + "0001080006040001020000000001" + "0a000001" + "000000000000" + "0a000002");
        ParsedFrame p = parse(arp);
        assertEquals(ParsedFrame.Kind.NOT_XAF, p.kind());
        assertEquals(0x0806, p.etherType());
    }

    @Test
    void tcpIsNotXaf() {
        byte[] f = golden(NetworkForm.IPV4);
        f[23] = 6;
        assertNotXaf(f);
        byte[] f6 = golden(NetworkForm.IPV6);
        f6[20] = 6;
        assertNotXaf(f6);
    }

    @Test
    void udpToAnotherPortIsNotXaf() {
        byte[] f = golden(NetworkForm.IPV4);
        put16(f, 36, 9451);
        assertNotXaf(f);
        byte[] f6 = golden(NetworkForm.IPV6);
        put16(f6, 56, 53);
        assertNotXaf(f6);
        byte[] fromXafPort = golden(NetworkForm.IPV4); // source port 9450 alone does not make a frame XAF
        put16(fromXafPort, 34, 9450);
        put16(fromXafPort, 36, 12345);
        assertNotXaf(fromXafPort);
    }

    @Test
    void ipv6WithAnExtensionHeaderIsNotXaf() {
        byte[] g = golden(NetworkForm.IPV6);
        byte[] f = new byte[g.length + 8];
        System.arraycopy(g, 0, f, 0, 54);
        f[54] = 17; // hop-by-hop options header, next = UDP, length 0 (8 bytes), PadN
        f[56] = 1;
        f[57] = 4;
        System.arraycopy(g, 54, f, 62, g.length - 54);
        f[20] = 0;
        put16(f, 18, Naive.u16(g, 18) + 8);
        assertNotXaf(f);
    }

    @Test
    void idFormWithAnotherNextHeaderIsNotXaf() {
        byte[] f = golden(NetworkForm.ID);
        f[22] = 0x11;
        assertNotXaf(f);
    }

    @Test
    void vlanTaggedAndRuntFramesAreNotXaf() {
        byte[] f = golden(NetworkForm.IPV4);
        put16(f, 12, 0x8100);
        assertNotXaf(f);
        ParsedFrame p = parse(new byte[13]);
        assertEquals(ParsedFrame.Kind.NOT_XAF, p.kind());
        assertEquals(-1, p.etherType());
        assertNotXaf(Arrays.copyOf(golden(NetworkForm.IPV4), 14 + 20 + 3)); // ends before the UDP ports
        assertNotXaf(Arrays.copyOf(golden(NetworkForm.ID), 14 + 8)); // ends before next_hdr
    }

    /**
     * PROTOCOL.md "Classification": a frame is identified by the UDP destination port or the ID next_hdr; one that
     * ends before those bytes is NOT_XAF, one that ends after them but inside the rest of its UDP or ID header is a
     * truncated XAF frame (dropped, TRUNCATED), at every byte of the header.
     */
    @Test
    void framesThatEndInsideTheUdpOrIdHeaderAreNotXafBeforeTheIdentifyingFieldAndTruncatedAfterIt() {
        for (NetworkForm form : new NetworkForm[] {NetworkForm.IPV4, NetworkForm.IPV6}) {
            byte[] g = golden(form);
            int udp = form.outerHeaderLength() - UdpHeader.LENGTH;
            for (int end = udp; end < udp + UdpHeader.LENGTH_OFFSET; end++) assertNotXaf(Arrays.copyOf(g, end));
            for (int end = udp + UdpHeader.LENGTH_OFFSET; end <= udp + UdpHeader.LENGTH; end++) {
                assertMalformed(Malformation.TRUNCATED, form, Arrays.copyOf(g, end));
            }
        }
        byte[] id = golden(NetworkForm.ID);
        int idStart = EthernetHeader.LENGTH;
        for (int end = idStart; end <= idStart + XafIdHeader.NEXT_HDR_OFFSET; end++) assertNotXaf(Arrays.copyOf(id, end));
        for (int end = idStart + XafIdHeader.NEXT_HDR_OFFSET + 1; end <= idStart + XafIdHeader.LENGTH; end++) {
            assertMalformed(Malformation.TRUNCATED, NetworkForm.ID, Arrays.copyOf(id, end));
        }
    }

    @Test
    void ipv4VersionFieldMustBeFour() {
        byte[] f = golden(NetworkForm.IPV4);
        f[14] = 0x65;
        assertNotXaf(f);
    }

    // ---- accepted variants and API edges --------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(NetworkForm.class)
    void trailingEthernetPaddingIsIgnored(NetworkForm form) {
        byte[] g = golden(form);
        ParsedFrame p = parse(Arrays.copyOf(g, g.length + 20));
        assertEquals(ParsedFrame.Kind.XAF, p.kind(), p::toString);
        assertEquals(g.length, p.frameLength());
    }

    @Test
    void theResultObjectIsReusedAndFullyReset() {
        ParsedFrame first = parse(golden(NetworkForm.IPV6));
        byte[] bad = golden(NetworkForm.ID);
        bad[26] = 0;
        ParsedFrame second = parse(bad);
        assertTrue(first == second);
        assertEquals(Malformation.BAD_MAGIC, second.malformation());
        ParsedFrame third = parse(new byte[60]);
        assertEquals(ParsedFrame.Kind.NOT_XAF, third.kind());
        assertNull(third.malformation());
        assertEquals(-1, third.xafOffset());
        assertEquals(0, third.payloadLength());
    }

    @Test
    void lengthBeyondTheSegmentIsACallerError() {
        var e = assertThrows(IllegalArgumentException.class,
                () -> parser.parse(MemorySegment.ofArray(new byte[10]), 11));
        assertTrue(e.getMessage().contains("10 bytes"), e.getMessage());
    }

    @Test
    void validateXafChecksABareDatagram() {
        byte[] g = golden(NetworkForm.ID);
        byte[] datagram = Arrays.copyOfRange(g, 26, g.length);
        MemorySegment seg = MemorySegment.ofArray(datagram);
        assertNull(FrameParser.validateXaf(seg, 0, datagram.length));
        assertEquals(Malformation.PAYLOAD_LENGTH, FrameParser.validateXaf(seg, 0, datagram.length - 1));
        assertEquals(Malformation.TRUNCATED, FrameParser.validateXaf(seg, 0, 47));
        assertEquals(Malformation.TRUNCATED,
                FrameParser.validateXaf(MemorySegment.ofArray(Arrays.copyOf(datagram, 50)), 0, datagram.length));
    }
}
