package io.xaforward.transport;

import io.xaforward.dataplane.sys.SyscallException;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.*;

/**
 * A UDP port with several flows sends from its port and the ones after it, a flush's burst from one of them in turn,
 * every datagram once and in order; a receiver with the same setting accepts a peer's datagrams from any of those
 * ports and from no other, and one with a single flow only from the peer's own port.
 */
class UdpFlowsTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();
    private static final int BURSTS = 24, PER_BURST = 10;

    private static UdpDatagramPort port(int bindPort, int flows) {
        return new UdpDatagramPort(new InetSocketAddress(LOOPBACK, bindPort), flows);
    }

    private static byte[] datagram(int n) {
        byte[] bytes = new byte[200 + n % 7];
        Arrays.fill(bytes, (byte) n);
        bytes[0] = (byte) (n >> 8);
        return bytes;
    }

    /** Sends BURSTS bursts of PER_BURST datagrams to {@code to}, flushing after each. */
    private static void sendBursts(UdpDatagramPort sender, Peer to) {
        int n = 0;
        for (int b = 0; b < BURSTS; b++) {
            for (int i = 0; i < PER_BURST; i++, n++) {
                byte[] bytes = datagram(n);
                long at = sender.claim(bytes.length, to);
                assertTrue(at >= 0, "room for a burst");
                MemorySegment.copy(bytes, 0, sender.claimSegment(), ValueLayout.JAVA_BYTE, at, bytes.length);
                assertTrue(sender.commitClaim());
            }
            sender.flush();
            assertFalse(sender.hasPendingSends(), "the kernel took the burst");
        }
    }

    @Test
    void burstsLeaveFromEveryFlowInTurnEachDatagramOnceInOrder() throws Exception {
        try (var sender = port(0, 4);
             DatagramChannel receiver = DatagramChannel.open(StandardProtocolFamily.INET)) {
            receiver.setOption(java.net.StandardSocketOptions.SO_RCVBUF, 8 << 20); // all bursts are sent first
            receiver.bind(new InetSocketAddress(LOOPBACK, 0));
            receiver.configureBlocking(false);
            assertEquals(4, sender.flows());
            int base = ((InetPeer) sender.localPeer()).address().getPort();
            sendBursts(sender, new InetPeer((InetSocketAddress) receiver.getLocalAddress()));

            ByteBuffer buffer = ByteBuffer.allocate(2048);
            List<Integer> ports = new ArrayList<>();
            long deadline = System.nanoTime() + 10_000_000_000L;
            for (int n = 0; n < BURSTS * PER_BURST; n++) {
                buffer.clear();
                InetSocketAddress from;
                while ((from = (InetSocketAddress) receiver.receive(buffer)) == null) {
                    assertTrue(System.nanoTime() < deadline, "only " + n + " datagrams arrived; from " + ports);
                    Thread.onSpinWait();
                }
                buffer.flip();
                byte[] got = new byte[buffer.remaining()];
                buffer.get(got);
                assertArrayEquals(datagram(n), got, "datagram " + n + " arrives once, in order");
                ports.add(from.getPort());
            }
            Set<Integer> used = new TreeSet<>(ports);
            assertEquals(Set.of(base, base + 1, base + 2, base + 3), used, "every flow's port sends");
            for (int b = 0; b < BURSTS; b++) {
                List<Integer> burst = ports.subList(b * PER_BURST, (b + 1) * PER_BURST);
                assertEquals(1, new TreeSet<>(burst).size(), "burst " + b + " leaves from one port: " + burst);
                if (b > 0) assertNotEquals(ports.get((b - 1) * PER_BURST), burst.get(0), "the next burst, the next flow");
            }
        }
    }

    @Test
    void aReceiverAcceptsThePeersFlowsAndNothingElse() {
        try (var sender = port(0, 3); var sameSetting = port(0, 3); var oneFlow = port(0, 1)) {
            int[] accepted = new int[2], rejected = new int[2];
            UdpDatagramPort[] receivers = {sameSetting, oneFlow};
            for (int r = 0; r < 2; r++) {
                sendBursts(sender, receivers[r].localPeer());
                UdpDatagramPort receiver = receivers[r];
                int index = r;
                long deadline = System.nanoTime() + 10_000_000_000L;
                while (accepted[r] + rejected[r] < BURSTS * PER_BURST && System.nanoTime() < deadline) {
                    receiver.poll((segment, offset, length) -> {
                        if (receiver.receivedFrom(sender.localPeer())) accepted[index]++; else rejected[index]++;
                    }, 64);
                }
            }
            assertEquals(BURSTS * PER_BURST, accepted[0], "three flows accept all three of the peer's ports");
            assertEquals(0, rejected[0]);
            assertEquals(BURSTS * PER_BURST / 3, accepted[1], "one flow accepts only the peer's own port");
            assertEquals(BURSTS * PER_BURST * 2 / 3, rejected[1]);
        }
    }

    @Test
    void aPortJustPastTheFlowsIsNotThePeers() throws Exception {
        try (var receiver = port(0, 4); DatagramChannel stranger = DatagramChannel.open(StandardProtocolFamily.INET)) {
            stranger.bind(new InetSocketAddress(LOOPBACK, 0));
            int strangerPort = ((InetSocketAddress) stranger.getLocalAddress()).getPort();
            InetSocketAddress to = ((InetPeer) receiver.localPeer()).address();
            stranger.send(ByteBuffer.wrap(new byte[64]), to);
            stranger.send(ByteBuffer.wrap(new byte[64]), to);
            List<Boolean> verdicts = new ArrayList<>();
            Peer fourBelow = new InetPeer(new InetSocketAddress(LOOPBACK, strangerPort - 4));
            Peer threeBelow = new InetPeer(new InetSocketAddress(LOOPBACK, strangerPort - 3));
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (verdicts.size() < 2 && System.nanoTime() < deadline) {
                receiver.poll((segment, offset, length) -> {
                    verdicts.add(receiver.receivedFrom(fourBelow));
                    verdicts.add(receiver.receivedFrom(threeBelow));
                }, 8);
            }
            assertEquals(List.of(false, true, false, true), verdicts,
                    "port + 4 is outside a 4-flow peer's ports, port + 3 inside");
        }
    }

    @Test
    void aTakenFlowPortIsNamedAndABadCountRefused() throws Exception {
        try (DatagramChannel taken = DatagramChannel.open(StandardProtocolFamily.INET)) {
            taken.bind(new InetSocketAddress(LOOPBACK, 0));
            int port = ((InetSocketAddress) taken.getLocalAddress()).getPort();
            SyscallException e = assertThrows(SyscallException.class, () -> port(port - 1, 2).close());
            assertTrue(e.getMessage().contains("flow 1 of 2") && e.getMessage().contains(":" + port), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> port(0, 0));
        assertThrows(IllegalArgumentException.class, () -> port(0, UdpDatagramPort.MAX_FLOWS + 1));
        IllegalArgumentException high = assertThrows(IllegalArgumentException.class, () -> port(65_534, 3));
        assertTrue(high.getMessage().contains("65535"), high.getMessage());
    }
}
