package io.xaforward.dataplane.sys;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteOrder;

/**
 * {@code struct sockaddr_in} and {@code struct sockaddr_in6} in native memory: written from an
 * {@link InetSocketAddress} once per destination, and read in place for every received datagram (port and the
 * address as two longs in its IPv4-mapped form, so a sender is compared without allocating).
 */
public final class InetSockaddr {
    /** Room for either form, 8-byte aligned. */
    public static final int SPACE = 32;
    public static final int IN_LENGTH = 16, IN6_LENGTH = 28;
    static final int FAMILY = 0, PORT = 2, IN_ADDR = 4, IN6_ADDR = 8, IN6_SCOPE_ID = 24;
    private static final ValueLayout.OfShort BE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfLong BE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    /** The high 32 bits of the low half of an IPv4-mapped address (::ffff:a.b.c.d). */
    private static final long MAPPED_V4 = 0xFFFF_0000_0000L;

    private InetSockaddr() {
    }

    /** The length of a sockaddr of {@code family} (AF_INET or AF_INET6). */
    public static int length(int family) {
        return family == Syscalls.AF_INET6 ? IN6_LENGTH : IN_LENGTH;
    }

    /**
     * Writes {@code address} into {@code out} (at least {@link #SPACE} bytes) as a sockaddr of {@code family}, an IPv4
     * address as IPv4-mapped on an IPv6 socket; returns its length.
     *
     * @throws IllegalArgumentException for an IPv6 address on an IPv4 socket
     */
    public static int write(MemorySegment out, int family, InetSocketAddress address) {
        out.fill((byte) 0);
        if (family == Syscalls.AF_INET) {
            if (!(address.getAddress() instanceof Inet4Address v4)) {
                throw new IllegalArgumentException("an IPv4 UDP port cannot use the address " + address);
            }
            out.set(ValueLayout.JAVA_SHORT, FAMILY, (short) Syscalls.AF_INET);
            out.set(BE_SHORT, PORT, (short) address.getPort());
            MemorySegment.copy(v4.getAddress(), 0, out, ValueLayout.JAVA_BYTE, IN_ADDR, 4);
            return IN_LENGTH;
        }
        out.set(ValueLayout.JAVA_SHORT, FAMILY, (short) Syscalls.AF_INET6);
        out.set(BE_SHORT, PORT, (short) address.getPort());
        MemorySegment.copy(mapped(address.getAddress()), 0, out, ValueLayout.JAVA_BYTE, IN6_ADDR, 16);
        if (address.getAddress() instanceof Inet6Address v6) out.set(ValueLayout.JAVA_INT, IN6_SCOPE_ID, v6.getScopeId());
        return IN6_LENGTH;
    }

    /** The sockaddr at {@code address} as an {@link InetSocketAddress} (allocates; for set-up, not per datagram). */
    public static InetSocketAddress read(MemorySegment address) {
        int port = port(address, 0);
        try {
            if (address.get(ValueLayout.JAVA_SHORT, FAMILY) == Syscalls.AF_INET6) {
                byte[] raw = address.asSlice(IN6_ADDR, 16).toArray(ValueLayout.JAVA_BYTE);
                return new InetSocketAddress(Inet6Address.getByAddress(null, raw,
                        address.get(ValueLayout.JAVA_INT, IN6_SCOPE_ID)), port);
            }
            return new InetSocketAddress(InetAddress.getByAddress(address.asSlice(IN_ADDR, 4).toArray(ValueLayout.JAVA_BYTE)),
                    port);
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The port of the sockaddr at {@code offset}. */
    public static int port(MemorySegment names, long offset) {
        return Short.toUnsignedInt(names.get(BE_SHORT, offset + PORT));
    }

    /** The high 64 bits of the sockaddr's address in IPv4-mapped form (0 for an IPv4 sockaddr). */
    public static long mappedHigh(MemorySegment names, long offset) {
        return isIpv6(names, offset) ? names.get(BE_LONG, offset + IN6_ADDR) : 0;
    }

    /** The low 64 bits of the sockaddr's address in IPv4-mapped form. */
    public static long mappedLow(MemorySegment names, long offset) {
        return isIpv6(names, offset) ? names.get(BE_LONG, offset + IN6_ADDR + 8)
                : MAPPED_V4 | Integer.toUnsignedLong(names.get(BE_INT, offset + IN_ADDR));
    }

    /** The 16 bytes of {@code address} in IPv6 form: IPv4 as IPv4-mapped. */
    public static byte[] mapped(InetAddress address) {
        byte[] raw = address.getAddress();
        if (raw.length == 16) return raw;
        byte[] out = new byte[16];
        out[10] = (byte) 0xFF;
        out[11] = (byte) 0xFF;
        System.arraycopy(raw, 0, out, 12, 4);
        return out;
    }

    private static boolean isIpv6(MemorySegment names, long offset) {
        return names.get(ValueLayout.JAVA_SHORT, offset + FAMILY) == Syscalls.AF_INET6;
    }
}
