package io.xaforward.cli;

/** Cluster files that option tests resolve ranks and training sections against (no host of them is contacted). */
final class SampleClusterFiles {
    /** Job 7: one IPv4 data center of two ranks, each on eth1. */
    static final String ONE_DC_TWO_RANKS = """
            job: 7
            datacenters:
              - {name: a, form: ipv4, mtu: 1500, gateway: {ip: 10.0.1.254}}
            ranks:
              - {rank: 0, datacenter: a, ip: 10.0.1.1, interface: eth1}
              - {rank: 1, datacenter: a, ip: 10.0.1.2, interface: eth1}
            """;

    private SampleClusterFiles() {}
}
