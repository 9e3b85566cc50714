package io.xaforward.transport;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.net.InetAddress;
import java.net.InetSocketAddress;

/**
 * Drives two transports from this thread (caller-driven event loops) and measures what the thread allocates while
 * a 4 MB message (about 3000 data packets plus ACKs) crosses: only per-message objects may remain, nothing per packet.
 */
class HotPathAllocationTest {
    /** The run every transport and seal of this test belongs to. */
    private static final RunNonce RUN = RunNonce.generate();
    private static final int JOB = 42;

    @ParameterizedTest
    @EnumSource(WireSecurity.class) // mac and encrypt through OpenSSL, which seals in place; the JDK fallback allocates
    void steadyStateTransferAllocatesNothingPerPacket(WireSecurity mode) {
        JobSecret secret = JobSecret.of(new byte[32]);
        LoopbackNetwork network = new LoopbackNetwork(LoopbackNetwork.Impairments.NONE, 1);
        LoopbackNetwork.Endpoint e0 = network.newEndpoint();
        LoopbackNetwork.Endpoint e1 = network.newEndpoint();
        AddressBook book = AddressBook.builder().add(0, 1, e0.localPeer()).add(1, 2, e1.localPeer()).build();
        try (ReliableTransport t0 = new ReliableTransport(TransportConfig.builder(0, JOB, 1)
                .wireSecurity(mode, secret, RUN).build(), book, e0);
             ReliableTransport t1 = new ReliableTransport(TransportConfig.builder(1, JOB, 1)
                .wireSecurity(mode, secret, RUN).build(), book, e1)) {
            SteadyStateTransfer.assertAllocatesNothingPerPacket(t0, t1, JOB);
        }
    }

    /**
     * The same over real UDP sockets on loopback: the port's GSO trains, GRO receive and claim-then-write path, where
     * data chunks and ACKs are both written in place in the port's send area and sealed there.
     */
    @ParameterizedTest
    @EnumSource(value = WireSecurity.class, names = {"CRC32C", "MAC"})
    void udpTransferAllocatesNothingPerPacket(WireSecurity mode) throws Exception {
        JobSecret secret = JobSecret.of(new byte[32]);
        InetAddress loopback = InetAddress.getByName("127.0.0.1");
        UdpDatagramPort port0 = new UdpDatagramPort(new InetSocketAddress(loopback, 0));
        UdpDatagramPort port1 = new UdpDatagramPort(new InetSocketAddress(loopback, 0));
        AddressBook book = AddressBook.builder().add(0, 1, port0.localPeer()).add(1, 2, port1.localPeer()).build();
        try (ReliableTransport t0 = new ReliableTransport(TransportConfig.builder(0, JOB, 1)
                .wireSecurity(mode, secret, RUN).build(), book, port0);
             ReliableTransport t1 = new ReliableTransport(TransportConfig.builder(1, JOB, 1)
                .wireSecurity(mode, secret, RUN).build(), book, port1)) {
            SteadyStateTransfer.assertAllocatesNothingPerPacket(t0, t1, JOB);
        }
    }
}
