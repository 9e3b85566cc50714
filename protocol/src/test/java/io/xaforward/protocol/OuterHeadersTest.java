package io.xaforward.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import org.junit.jupiter.api.Test;

/** Outer-header flyweights write big-endian values at their documented offsets, relative to where they wrap. */
class OuterHeadersTest {
    @Test
    void ethernet() {
        byte[] raw = new byte[2 + 14];
        EthernetHeader e = new EthernetHeader().wrap(MemorySegment.ofArray(raw), 2)
                .dstMac(0xFFEEDDCCBBAAL).srcMac(new byte[] {1, 2, 3, 4, 5, 6}).etherType(0x86DD);
        assertEquals("0000ffeeddccbbaa01020304050686dd", Naive.hex(raw));
        assertEquals(0xFFEEDDCCBBAAL, e.dstMac());
        assertEquals(0x010203040506L, e.srcMac());
        byte[] mac = new byte[6];
        e.readDstMac(mac);
        assertArrayEquals(new byte[] {-1, -18, -35, -52, -69, -86}, mac);
        assertEquals(0x86DD, e.etherType());
        assertThrows(IllegalArgumentException.class, () -> e.srcMac(new byte[5]));
    }

    @Test
    void ipv4() {
        byte[] raw = new byte[20];
        Ipv4Header h = new Ipv4Header().wrap(MemorySegment.ofArray(raw), 0).versionIhl(0x45).tos(0xB8)
                .totalLength(0xFFFF).identification(0x1234).flagsFragment(0x2000 | 0x1FFF).ttl(255).protocol(17)
                .srcAddr(0xC0A80001).dstAddr(0xFFFFFFFF);
        assertEquals("45b8ffff1234 3fff ff11 0000 c0a80001ffffffff".replace(" ", ""), Naive.hex(raw));
        assertEquals(4, h.version());
        assertEquals(20, h.headerLength());
        assertEquals(0xFFFF, h.totalLength());
        assertTrue(h.moreFragments());
        assertEquals(0x1FFF, h.fragmentOffset());
        assertEquals(255, h.ttl());
        assertEquals(0xC0A80001, h.srcAddr());
        assertEquals(-1, h.dstAddr());
        h.updateChecksum();
        assertEquals(Naive.onesComplementSum(raw, 0, 20), 0xFFFF);
        assertTrue(h.checksumValid());
        h.ttl(254);
        assertFalse(h.checksumValid());
    }

    @Test
    void ipv6() throws Exception {
        byte[] raw = new byte[40];
        byte[] src = InetAddress.getByName("fd00::1").getAddress();
        byte[] dst = InetAddress.getByName("2001:db8::ffff").getAddress();
        Ipv6Header h = new Ipv6Header().wrap(MemorySegment.ofArray(raw), 0)
                .versionClassFlow(Ipv6Header.VERSION_CLASS_FLOW_DEFAULT).payloadLength(0xFFFF).nextHeader(17)
                .hopLimit(255).srcAddr(src).dstAddr(dst);
        assertEquals("60000000ffff11ff" + Naive.hex(src) + Naive.hex(dst), Naive.hex(raw));
        assertEquals(6, h.version());
        assertEquals(0xFFFF, h.payloadLength());
        assertEquals(17, h.nextHeader());
        assertEquals(255, h.hopLimit());
        byte[] back = new byte[16];
        h.readDstAddr(back);
        assertArrayEquals(dst, back);
        h.readSrcAddr(back);
        assertArrayEquals(src, back);
    }

    @Test
    void udp() {
        byte[] raw = new byte[8];
        UdpHeader u = new UdpHeader().wrap(MemorySegment.ofArray(raw), 0).srcPort(0xFFFF).dstPort(9450)
                .length(0x8001).checksum(0xABCD);
        assertEquals("ffff24ea8001abcd", Naive.hex(raw));
        assertEquals(0xFFFF, u.srcPort());
        assertEquals(9450, u.dstPort());
        assertEquals(0x8001, u.length());
        assertEquals(0xABCD, u.checksum());
    }

    @Test
    void idHeaderMatchesStructXafIdHdr() {
        byte[] raw = new byte[12];
        XafIdHeader h = new XafIdHeader().wrap(MemorySegment.ofArray(raw), 0).srcId(0xFFFFFFFF).dstId(0x0A0B0C0D)
                .nextHdr(XafIdHeader.NEXT_HDR_XAF).reserved(0).length(0xFFFF);
        assertEquals("ffffffff0a0b0c0dfd00ffff", Naive.hex(raw));
        assertEquals(-1, h.srcId());
        assertEquals(0x0A0B0C0D, h.dstId());
        assertEquals(0xFD, h.nextHdr());
        assertEquals(0xFFFF, h.length());
    }

    @Test
    void outerAddressingValidatesAndRoundTrips() throws Exception {
        OuterAddressing a = new OuterAddressing();
        assertEquals(XafHeader.UDP_PORT, a.dstPort());
        assertEquals(64, a.ipHopLimit());
        a.srcMac(0x0200000000ABL).dstIp(InetAddress.getByName("fd00::2")).srcIpv4(0x0A000001);
        assertEquals(0x0200000000ABL, a.srcMac());
        assertEquals(16, a.dstIpLength());
        assertEquals(4, a.srcIpLength());
        assertEquals(InetAddress.getByName("10.0.0.1"), a.srcIp());
        assertEquals(InetAddress.getByName("fd00::2"), a.dstIp());
        assertThrows(IllegalArgumentException.class, () -> a.srcMac(1L << 48));
        assertThrows(IllegalArgumentException.class, () -> a.srcIp(new byte[5]));
        assertThrows(IllegalArgumentException.class, () -> a.srcPort(65536));
        assertThrows(IllegalArgumentException.class, () -> a.ipHopLimit(0));
    }
}
