package io.xaforward.transport;

import java.net.InetAddress;
import java.net.UnknownHostException;

/** Parses IP address literals without ever falling back to a DNS lookup. */
final class InetLiterals {
    private InetLiterals() {}

    static InetAddress parse(String literal) {
        if (literal == null || literal.isBlank()) {
            throw new IllegalArgumentException("IP address literal is missing");
        }
        boolean looksLikeIp = literal.indexOf(':') >= 0 || literal.chars().allMatch(c -> c == '.' || Character.isDigit(c));
        if (!looksLikeIp) {
            throw new IllegalArgumentException("'" + literal + "' is not an IPv4 or IPv6 address literal");
        }
        try {
            return InetAddress.getByName(literal);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("'" + literal + "' is not an IPv4 or IPv6 address literal", e);
        }
    }
}
