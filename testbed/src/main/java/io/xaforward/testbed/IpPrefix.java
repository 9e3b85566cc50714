package io.xaforward.testbed;

import java.math.BigInteger;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * An IPv4 or IPv6 network prefix such as {@code 10.77.0.0/24}; hands out the deterministic addresses of a DC.
 * The network address is normalised (host bits cleared).
 */
public record IpPrefix(InetAddress network, int length) {

    public IpPrefix {
        int bits = network.getAddress().length * 8;
        if (length < 0 || length > bits) throw new IllegalArgumentException("prefix length " + length + " out of range 0.." + bits);
        BigInteger value = new BigInteger(1, network.getAddress());
        BigInteger hostMask = BigInteger.ONE.shiftLeft(bits - length).subtract(BigInteger.ONE);
        network = toAddress(value.andNot(hostMask), network.getAddress().length);
    }

    /** Parses {@code ADDRESS/LENGTH}; accepts only numeric addresses (never resolves names). */
    public static IpPrefix parse(String text) {
        int slash = text.indexOf('/');
        if (slash < 0) throw new IllegalArgumentException("'" + text + "' is not ADDRESS/LENGTH");
        String addr = text.substring(0, slash);
        if (!addr.matches("[0-9a-fA-F:.]+") || !(addr.contains(".") || addr.contains(":")))
            throw new IllegalArgumentException("'" + addr + "' is not a numeric IP address");
        int length;
        try {
            length = Integer.parseInt(text.substring(slash + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + text.substring(slash + 1) + "' is not a prefix length");
        }
        try {
            return new IpPrefix(InetAddress.getByName(addr), length);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("'" + addr + "' is not a numeric IP address");
        }
    }

    public boolean isIpv4() {
        return network instanceof Inet4Address;
    }

    public boolean isIpv6() {
        return network instanceof Inet6Address;
    }

    /** Number of host bits. */
    public int hostBits() {
        return network.getAddress().length * 8 - length;
    }

    /** The address {@code offset} above the network address; fails if it leaves the prefix. */
    public InetAddress offset(long offset) {
        if (offset < 0 || (hostBits() < 63 && offset >= (1L << hostBits())))
            throw new IllegalArgumentException("offset " + offset + " outside " + this);
        BigInteger value = new BigInteger(1, network.getAddress()).add(BigInteger.valueOf(offset));
        return toAddress(value, network.getAddress().length);
    }

    /** True if the two prefixes share an address (only for the same family). */
    public boolean overlaps(IpPrefix other) {
        if (isIpv4() != other.isIpv4()) return false;
        int shorter = Math.min(length, other.length);
        return new IpPrefix(network, shorter).network.equals(new IpPrefix(other.network, shorter).network);
    }

    private static InetAddress toAddress(BigInteger value, int bytes) {
        byte[] raw = value.toByteArray();
        byte[] out = new byte[bytes];
        int copy = Math.min(raw.length, bytes);
        System.arraycopy(raw, raw.length - copy, out, bytes - copy, copy);
        try {
            return InetAddress.getByAddress(out);
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    @Override
    public String toString() {
        return format(network) + "/" + length;
    }

    /** Address text as {@code ip} prints it: IPv6 in the RFC 5952 short form (longest zero run as "::"). */
    public static String format(InetAddress address) {
        if (!(address instanceof Inet6Address)) return address.getHostAddress();
        byte[] b = address.getAddress();
        int[] groups = new int[8];
        for (int i = 0; i < 8; i++) groups[i] = ((b[2 * i] & 0xff) << 8) | (b[2 * i + 1] & 0xff);
        int bestStart = -1, bestLen = 1;
        for (int i = 0; i < 8; ) {
            if (groups[i] != 0) { i++; continue; }
            int j = i;
            while (j < 8 && groups[j] == 0) j++;
            if (j - i > bestLen) { bestStart = i; bestLen = j - i; }
            i = j;
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                sb.append("::");
                i += bestLen - 1;
                continue;
            }
            if (sb.length() > 0 && sb.charAt(sb.length() - 1) != ':') sb.append(':');
            sb.append(Integer.toHexString(groups[i]));
        }
        return sb.toString();
    }
}
