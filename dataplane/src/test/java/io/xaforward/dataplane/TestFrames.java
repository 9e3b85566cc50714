package io.xaforward.dataplane;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * The test-side frame builder and naive checksum code of the dataplane tests, written independently of the protocol
 * module and of the BPF program (golden tests compare the program's output against these frames): frames are
 * assembled byte by byte with ByteBuffer, checksums by summing every 16-bit word. {@link Numbered} writes numbered
 * frames in place for the AF_XDP tests.
 */
public final class TestFrames {
    private TestFrames() {}

    public static final int ETH_ID = 0x0812;
    static final int ETH_IPV4 = 0x0800, ETH_IPV6 = 0x86DD, ETH_ARP = 0x0806;
    static final int XAF_PORT = 9450;

    /** XAF header fields a test cares about. */
    record Xaf(int magic, int version, int hdrLen, int hop, int networkId, int jobId, int jobToken, byte[] payload,
               int payloadLenOverride, int srcRank) {
        static Xaf of(int hop, int networkId, int jobId, int jobToken, byte[] payload) {
            return new Xaf(0x5846, 1, 48, hop, networkId, jobId, jobToken, payload, -1, 3);
        }
        Xaf withHop(int h) { return new Xaf(magic, version, hdrLen, h, networkId, jobId, jobToken, payload, payloadLenOverride, srcRank); }
        Xaf withMagic(int m) { return new Xaf(m, version, hdrLen, hop, networkId, jobId, jobToken, payload, payloadLenOverride, srcRank); }
        Xaf withVersion(int v) { return new Xaf(magic, v, hdrLen, hop, networkId, jobId, jobToken, payload, payloadLenOverride, srcRank); }
        Xaf withHdrLen(int l) { return new Xaf(magic, version, l, hop, networkId, jobId, jobToken, payload, payloadLenOverride, srcRank); }
        Xaf withPayloadLen(int l) { return new Xaf(magic, version, hdrLen, hop, networkId, jobId, jobToken, payload, l, srcRank); }
        Xaf withJob(int job, int token) { return new Xaf(magic, version, hdrLen, hop, networkId, job, token, payload, payloadLenOverride, srcRank); }
        Xaf withSrcRank(int r) { return new Xaf(magic, version, hdrLen, hop, networkId, jobId, jobToken, payload, payloadLenOverride, r); }

        /** The 48-byte header followed by the payload. */
        byte[] bytes() {
            ByteBuffer b = ByteBuffer.allocate(48 + payload.length);
            b.putShort((short) magic).put((byte) version).put((byte) 1 /* DATA */).put((byte) 0x01 /* LAST */)
                    .put((byte) hop).put((byte) hdrLen).put((byte) 1 /* F32 */);
            b.putInt(networkId).putInt(jobId).putInt(jobToken);
            b.putShort((short) srcRank).putShort((short) 7); // src/dst rank
            b.putInt(1234).putInt(5).putInt(0).putInt(1); // step, bucket, chunk index/count
            b.putShort((short) (payloadLenOverride >= 0 ? payloadLenOverride : payload.length));
            b.putShort((short) onesSum(payload, 0, payload.length));
            CRC32C crc = new CRC32C();
            crc.update(payload);
            b.putInt((int) crc.getValue());
            b.put(payload);
            return b.array();
        }
    }

    static byte[] payload(int len, int seed) {
        byte[] p = new byte[len];
        for (int i = 0; i < len; i++) p[i] = (byte) (i * 31 + seed * 7 + (i >> 3));
        return p;
    }

    static byte[] mac(int last) { return new byte[] {0x02, 0x00, 0x5e, 0x10, 0x20, (byte) last}; }
    static byte[] ip4(int a, int b, int c, int d) { return new byte[] {(byte) a, (byte) b, (byte) c, (byte) d}; }
    static byte[] ip6(int last) {
        byte[] a = new byte[16];
        a[0] = (byte) 0xfd; a[1] = 0x58; a[2] = 0x41; a[3] = 0x46; a[14] = 0x01; a[15] = (byte) last;
        return a;
    }

    static ByteBuffer eth(int totalLen, byte[] dst, byte[] src, int type) {
        ByteBuffer b = ByteBuffer.allocate(totalLen);
        b.put(dst).put(src).putShort((short) type);
        return b;
    }

    /** Ethernet / IPv4 (no options) / UDP / body, with correct IPv4 and UDP checksums. */
    static byte[] ipv4Udp(byte[] dmac, byte[] smac, byte[] sip, byte[] dip, int ttl, int ipId, int fragField,
                          int sport, int dport, byte[] body) {
        int udpLen = 8 + body.length;
        ByteBuffer b = eth(14 + 20 + udpLen, dmac, smac, ETH_IPV4);
        b.put((byte) 0x45).put((byte) 0).putShort((short) (20 + udpLen)).putShort((short) ipId)
                .putShort((short) fragField).put((byte) ttl).put((byte) 17).putShort((short) 0).put(sip).put(dip);
        b.putShort((short) sport).putShort((short) dport).putShort((short) udpLen).putShort((short) 0).put(body);
        byte[] f = b.array();
        putShort(f, 24, ipv4HeaderChecksum(f, 14));
        putShort(f, 40, udpChecksum(f));
        return f;
    }

    /** Ethernet / IPv6 / UDP / body, with a correct UDP checksum. */
    static byte[] ipv6Udp(byte[] dmac, byte[] smac, byte[] sip, byte[] dip, int hop, int sport, int dport, byte[] body) {
        int udpLen = 8 + body.length;
        ByteBuffer b = eth(14 + 40 + udpLen, dmac, smac, ETH_IPV6);
        b.putInt(0x60000000).putShort((short) udpLen).put((byte) 17).put((byte) hop).put(sip).put(dip);
        b.putShort((short) sport).putShort((short) dport).putShort((short) udpLen).putShort((short) 0).put(body);
        byte[] f = b.array();
        putShort(f, 60, udpChecksum(f));
        return f;
    }

    /** Ethernet(0x0812) / ID header / body. */
    static byte[] idFrame(byte[] dmac, byte[] smac, int srcId, int dstId, int nextHdr, byte[] body) {
        ByteBuffer b = eth(14 + 12 + body.length, dmac, smac, ETH_ID);
        b.putInt(srcId).putInt(dstId).put((byte) nextHdr).put((byte) 0).putShort((short) body.length).put(body);
        return b.array();
    }

    static byte[] pad(byte[] frame, int extra) {
        byte[] p = new byte[frame.length + extra];
        System.arraycopy(frame, 0, p, 0, frame.length);
        for (int i = frame.length; i < p.length; i++) p[i] = (byte) 0xA5;
        return p;
    }

    static void putShort(byte[] f, int off, int v) { f[off] = (byte) (v >> 8); f[off + 1] = (byte) v; }
    static int getShort(byte[] f, int off) { return ((f[off] & 0xff) << 8) | (f[off + 1] & 0xff); }

    /** Ones'-complement sum (folded, not inverted) of big-endian 16-bit words; an odd last byte is the high byte. */
    static int onesSum(byte[] b, int off, int len) {
        return onesSum(MemorySegment.ofArray(b), off, len);
    }

    /** {@link #onesSum(byte[], int, int)} over {@code len} bytes of {@code f} at {@code off}; allocates nothing. */
    static int onesSum(MemorySegment f, long off, int len) {
        long sum = 0;
        int i = 0;
        for (; i + 1 < len; i += 2) {
            sum += ((f.get(ValueLayout.JAVA_BYTE, off + i) & 0xff) << 8) | (f.get(ValueLayout.JAVA_BYTE, off + i + 1) & 0xff);
        }
        if (i < len) sum += (f.get(ValueLayout.JAVA_BYTE, off + i) & 0xff) << 8;
        while ((sum >> 16) != 0) sum = (sum & 0xffff) + (sum >> 16);
        return (int) sum;
    }

    /** IPv4 header checksum of the 20-byte header at {@code ipOff}, computed with the checksum field as zero. */
    static int ipv4HeaderChecksum(byte[] f, int ipOff) {
        byte[] h = java.util.Arrays.copyOfRange(f, ipOff, ipOff + 20);
        h[10] = 0; h[11] = 0;
        return ~onesSum(h, 0, 20) & 0xffff;
    }

    /**
     * UDP checksum of an Ethernet/IPv4 or Ethernet/IPv6 frame, computed naively over pseudo-header and the whole UDP
     * datagram (payload included) with the checksum field as zero; 0 becomes 0xFFFF.
     */
    static int udpChecksum(byte[] f) {
        int type = getShort(f, 12);
        int udpOff, udpLen;
        byte[] pseudo;
        if (type == ETH_IPV4) {
            udpOff = 34;
            udpLen = getShort(f, udpOff + 4);
            pseudo = ByteBuffer.allocate(12).put(f, 26, 4).put(f, 30, 4).put((byte) 0).put((byte) 17).putShort((short) udpLen).array();
        } else if (type == ETH_IPV6) {
            udpOff = 54;
            udpLen = getShort(f, udpOff + 4);
            pseudo = ByteBuffer.allocate(40).put(f, 22, 16).put(f, 38, 16).putInt(udpLen).putInt(17).array();
        } else {
            throw new IllegalArgumentException("not IP: 0x" + Integer.toHexString(type));
        }
        byte[] all = new byte[pseudo.length + udpLen];
        System.arraycopy(pseudo, 0, all, 0, pseudo.length);
        System.arraycopy(f, udpOff, all, pseudo.length, udpLen);
        all[pseudo.length + 6] = 0;
        all[pseudo.length + 7] = 0;
        int c = ~onesSum(all, 0, all.length) & 0xffff;
        return c == 0 ? 0xffff : c;
    }

    /**
     * Identifier-native XAF frames (Ethernet 0x0812 / 12-byte ID header / 48-byte XAF header / payload) numbered by
     * {@code seq}: frame {@code seq} is fully determined by its arguments, so a receiver can rebuild what it should
     * have got. Written in place into a MemorySegment, allocation-free, for the AF_XDP tests' hot loops.
     */
    public static final class Numbered {
        private Numbered() {}

        public static final int JOB = 77, TOKEN = 0x5eed1234;
        public static final int XAF_OFFSET = 14 + 12;
        public static final int HOP_OFFSET = XAF_OFFSET + 5;
        public static final int STEP_OFFSET = XAF_OFFSET + 24;
        public static final int NEXT_HDR_OFFSET = 14 + 8;
        public static final int INITIAL_HOP = 8;

        private static final ValueLayout.OfShort BE16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
        private static final ValueLayout.OfInt BE32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

        /** Payload length of frame {@code seq}: 16..1415 bytes, so frames are 90..1489 bytes. */
        public static int payloadLength(int seq) { return 16 + (int) ((seq * 37L) % 1400); }

        public static int frameLength(int seq) { return XAF_OFFSET + 48 + payloadLength(seq); }

        /** Writes XAF frame {@code seq} for {@code networkId} at {@code off}; returns its length. */
        public static int write(MemorySegment f, long off, int seq, int networkId) {
            int payloadLen = payloadLength(seq);
            for (int i = 0; i < 6; i++) f.set(ValueLayout.JAVA_BYTE, off + i, (byte) 0xff);
            for (int i = 0; i < 6; i++) f.set(ValueLayout.JAVA_BYTE, off + 6 + i, (byte) (i == 0 ? 0x02 : i));
            f.set(BE16, off + 12, (short) ETH_ID);
            long id = off + 14;
            f.set(BE32, id, 0x0A000001);                       // src_id
            f.set(BE32, id + 4, networkId);                     // dst_id
            f.set(ValueLayout.JAVA_BYTE, id + 8, (byte) 0xFD);  // next header: XAF
            f.set(ValueLayout.JAVA_BYTE, id + 9, (byte) 0);
            f.set(BE16, id + 10, (short) (48 + payloadLen));
            long x = off + XAF_OFFSET;
            f.set(BE16, x, (short) 0x5846);
            f.set(ValueLayout.JAVA_BYTE, x + 2, (byte) 1);      // version
            f.set(ValueLayout.JAVA_BYTE, x + 3, (byte) 1);      // DATA
            f.set(ValueLayout.JAVA_BYTE, x + 4, (byte) 1);      // LAST_CHUNK
            f.set(ValueLayout.JAVA_BYTE, x + 5, (byte) INITIAL_HOP);
            f.set(ValueLayout.JAVA_BYTE, x + 6, (byte) 48);
            f.set(ValueLayout.JAVA_BYTE, x + 7, (byte) 0);      // BYTES
            f.set(BE32, x + 8, networkId);
            f.set(BE32, x + 12, JOB);
            f.set(BE32, x + 16, TOKEN);
            f.set(BE16, x + 20, (short) 1);
            f.set(BE16, x + 22, (short) 2);
            f.set(BE32, x + 24, seq);                           // step: the sequence number
            f.set(BE32, x + 28, 0);
            f.set(BE32, x + 32, 0);
            f.set(BE32, x + 36, 1);
            f.set(BE16, x + 40, (short) payloadLen);
            long p = x + 48;
            for (int i = 0; i < payloadLen; i++) f.set(ValueLayout.JAVA_BYTE, p + i, (byte) (seq * 31 + i * 7 + (i >> 5)));
            f.set(BE16, x + 42, (short) onesSum(f, p, payloadLen));
            f.set(BE32, x + 44, 0); // CRC32C: not checked by gateways, left zero
            return XAF_OFFSET + 48 + payloadLen;
        }

        /** A non-XAF frame of the ID EtherType (next header 0x11): the XDP program must pass it to the kernel. */
        public static int writeNonXaf(MemorySegment f, int seq) {
            int len = write(f, 0, seq, 0);
            f.set(ValueLayout.JAVA_BYTE, NEXT_HDR_OFFSET, (byte) 0x11);
            return len;
        }

        public static int seqOf(MemorySegment f, long off) { return f.get(BE32, off + STEP_OFFSET); }
    }
}
