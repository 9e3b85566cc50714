package io.xaforward.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The UDP port's batched paths (GSO trains and sendmmsg on send, GRO trains and recvmmsg on receive) deliver exactly
 * the datagrams that were sent, byte for byte and in order, whichever offloads either side uses; and they really
 * batch (fewer system calls than datagrams).
 */
class UdpBatchingTest {
    private static final int DATAGRAMS = 3000;

    /** Lengths as the transport produces them: runs of full chunks, a short last chunk, small ACKs in between. */
    private static int[] lengths(long seed) {
        Random random = new Random(seed);
        int[] lengths = new int[DATAGRAMS];
        for (int i = 0; i < DATAGRAMS; i++) {
            int r = random.nextInt(100);
            lengths[i] = r < 80 ? 1448 : r < 90 ? 48 + 16 + 8 * random.nextInt(17) : 48 + random.nextInt(1400);
        }
        return lengths;
    }

    @ParameterizedTest(name = "{0}: sender gso {1}, receiver gro {2}")
    @CsvSource({
            "127.0.0.1, true, true",
            "127.0.0.1, true, false",
            "127.0.0.1, false, true",
            "127.0.0.1, false, false",
            "::1, true, true",
            "::1, false, false",
    })
    void everyDatagramArrivesByteForByteInOrder(String host, boolean gso, boolean gro) throws Exception {
        InetAddress address = InetAddress.getByName(host);
        try (var sender = new UdpDatagramPort(new InetSocketAddress(address, 0), UdpDatagramPort.MAX_UDP_DATAGRAM,
                     UdpDatagramPort.DEFAULT_SOCKET_BUFFER_BYTES, new UdpDatagramPort.Offloads(gso, false));
             var receiver = new UdpDatagramPort(new InetSocketAddress(address, 0), UdpDatagramPort.MAX_UDP_DATAGRAM,
                     UdpDatagramPort.DEFAULT_SOCKET_BUFFER_BYTES, new UdpDatagramPort.Offloads(false, gro))) {
            assertEquals(gso, sender.gsoEnabled(), "this kernel offers UDP_SEGMENT");
            assertEquals(gro, receiver.groEnabled(), "this kernel offers UDP_GRO");
            int[] lengths = lengths(42);
            List<byte[]> sent = new ArrayList<>();
            List<byte[]> received = new ArrayList<>();
            MemorySegment scratch = MemorySegment.ofArray(new byte[2048]);
            Random content = new Random(7);
            int next = 0;
            long deadline = System.nanoTime() + 20_000_000_000L;
            DatagramHandler collect = (segment, offset, length) -> {
                assertTrue(receiver.receivedFrom(sender.localPeer()), "the sender's address is recognised");
                received.add(segment.asSlice(offset, length).toArray(ValueLayout.JAVA_BYTE));
            };
            while (received.size() < DATAGRAMS && System.nanoTime() < deadline) {
                // Send in bursts of up to 200, half through claim-then-write and half through send().
                for (int burst = 0; burst < 200 && next < DATAGRAMS; burst++) {
                    byte[] bytes = new byte[lengths[next]];
                    content.nextBytes(bytes);
                    boolean ok;
                    if (next % 2 == 0) {
                        long at = sender.claim(bytes.length, receiver.localPeer());
                        if (at < 0) break;
                        MemorySegment.copy(bytes, 0, sender.claimSegment(), ValueLayout.JAVA_BYTE, at, bytes.length);
                        ok = sender.commitClaim();
                    } else {
                        MemorySegment.copy(bytes, 0, scratch, ValueLayout.JAVA_BYTE, 0, bytes.length);
                        ok = sender.send(scratch, 0, bytes.length, receiver.localPeer());
                        if (!ok) break;
                    }
                    assertTrue(ok);
                    sent.add(bytes);
                    next++;
                }
                sender.flush();
                receiver.awaitReceive(1_000_000);
                receiver.poll(collect, 1 << 20);
            }
            assertEquals(DATAGRAMS, received.size(), "datagrams received (none may be lost on loopback)");
            for (int i = 0; i < DATAGRAMS; i++) {
                assertArrayEquals(sent.get(i), received.get(i), "datagram " + i);
            }
            assertEquals(DATAGRAMS, sender.datagramsSent());
            assertEquals(0, sender.sendDrops());
            assertTrue(sender.sendCalls() * 5 < DATAGRAMS,
                    "sendmmsg carries many datagrams per call: " + sender.sendCalls() + " calls");
            if (gso && gro) {
                assertTrue(receiver.receiveCalls() * 5 < DATAGRAMS,
                        "GRO trains arrive many datagrams per call: " + receiver.receiveCalls() + " calls");
            }
        }
    }

    @Test
    void datagramsFromAnotherAddressAreNotTakenForThePeer() throws Exception {
        InetAddress lo = InetAddress.getLoopbackAddress();
        try (var a = new UdpDatagramPort(new InetSocketAddress(lo, 0));
             var b = new UdpDatagramPort(new InetSocketAddress(lo, 0));
             var receiver = new UdpDatagramPort(new InetSocketAddress(lo, 0))) {
            MemorySegment datagram = MemorySegment.ofArray(new byte[100]);
            assertTrue(b.send(datagram, 0, 100, receiver.localPeer()));
            b.flush();
            boolean[] fromA = {true};
            int[] count = {0};
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (count[0] == 0 && System.nanoTime() < deadline) {
                receiver.awaitReceive(10_000_000);
                receiver.poll((s, o, l) -> {
                    fromA[0] = receiver.receivedFrom(a.localPeer());
                    assertTrue(receiver.receivedFrom(b.localPeer()));
                    count[0]++;
                }, 10);
            }
            assertEquals(1, count[0]);
            assertFalse(fromA[0], "a datagram from b's port is not from a");
        }
    }

    @Test
    void anIpv4PortRefusesAnIpv6DestinationClearly() throws Exception {
        try (var port = new UdpDatagramPort(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0))) {
            var e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                    () -> port.claim(100, new InetPeer(new InetSocketAddress(InetAddress.getByName("::1"), 9))));
            assertTrue(e.getMessage().contains("IPv6"), e.getMessage());
        }
    }
}
