package io.xaforward.protocol;

import java.util.HexFormat;

/** Independent, deliberately simple reference computations the tests compare the production code against. */
final class Naive {
    private Naive() {}

    /** RFC 1071 sum, one 16-bit word at a time from two bytes, odd tail padded with zero, folded at the end. */
    static int onesComplementSum(byte[] data, int offset, int length) {
        long sum = 0;
        for (int i = 0; i < length; i += 2) {
            int hi = data[offset + i] & 0xFF;
            int lo = i + 1 < length ? data[offset + i + 1] & 0xFF : 0;
            sum += (hi << 8) | lo;
        }
        while ((sum >> 16) != 0) {
            sum = (sum & 0xFFFF) + (sum >> 16);
        }
        return (int) sum;
    }

    /** Bitwise CRC32C (reflected polynomial 0x82F63B78). */
    static int crc32c(byte[] data, int offset, int length) {
        int crc = 0xFFFFFFFF;
        for (int i = 0; i < length; i++) {
            crc ^= data[offset + i] & 0xFF;
            for (int b = 0; b < 8; b++) {
                crc = (crc & 1) != 0 ? (crc >>> 1) ^ 0x82F63B78 : crc >>> 1;
            }
        }
        return ~crc;
    }

    static int u16(byte[] f, int off) { return ((f[off] & 0xFF) << 8) | (f[off + 1] & 0xFF); }

    static long u32(byte[] f, int off) {
        return ((long) u16(f, off) << 16) | u16(f, off + 2);
    }

    /**
     * Verifies the UDP checksum of an IPv4 or IPv6 frame from raw bytes only: builds the pseudo-header by hand and
     * sums it with the whole UDP datagram, byte pairs at a time.
     */
    static boolean udpChecksumValid(byte[] f, boolean ipv6) {
        int udp = ipv6 ? 54 : 34;
        int udpLen = u16(f, udp + 4);
        byte[] pseudo;
        if (ipv6) {
            pseudo = new byte[40];
            System.arraycopy(f, 22, pseudo, 0, 32);
            pseudo[34] = (byte) (udpLen >> 8);
            pseudo[35] = (byte) udpLen;
            pseudo[39] = 17;
        } else {
            pseudo = new byte[12];
            System.arraycopy(f, 26, pseudo, 0, 8);
            pseudo[9] = 17;
            pseudo[10] = (byte) (udpLen >> 8);
            pseudo[11] = (byte) udpLen;
        }
        byte[] all = new byte[pseudo.length + udpLen];
        System.arraycopy(pseudo, 0, all, 0, pseudo.length);
        System.arraycopy(f, udp, all, pseudo.length, udpLen);
        return u16(f, udp + 6) != 0 && onesComplementSum(all, 0, all.length) == 0xFFFF;
    }

    static boolean ipv4HeaderChecksumValid(byte[] f) {
        return onesComplementSum(f, 14, 20) == 0xFFFF;
    }

    static byte[] hex(String s) { return HexFormat.of().parseHex(s); }

    static String hex(byte[] b) { return HexFormat.of().formatHex(b); }
}
