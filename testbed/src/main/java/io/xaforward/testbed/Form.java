package io.xaforward.testbed;

import java.util.Locale;

/** The network form a data center speaks; decides which addresses its nodes get and how gateways translate. */
public enum Form {
    /** IPv4/UDP: hosts get an IPv4 address in the DC subnet. */
    IPV4,
    /** IPv6/UDP: hosts get an IPv6 address in the DC subnet. */
    IPV6,
    /** Identifier-native Ethernet (EtherType 0x0812): hosts have a MAC and an identity but no IP address. */
    ID;

    /** The spelling used in topology files. */
    public String yamlName() {
        return name().toLowerCase(Locale.ROOT);
    }

    static Form parse(String text) {
        for (Form f : values()) if (f.yamlName().equals(text)) return f;
        throw new IllegalArgumentException("unknown form '" + text + "' (expected ipv4, ipv6 or id)");
    }
}
