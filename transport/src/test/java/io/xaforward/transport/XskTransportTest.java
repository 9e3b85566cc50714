package io.xaforward.transport;

import io.xaforward.dataplane.sys.NetworkNamespace;
import io.xaforward.protocol.InternetChecksum;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.XafHeader;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The reliable transport over {@link XskDatagramPort}s on a veth pair in a test namespace: an 8 MB message in each
 * network form, byte for byte; and interoperation of an AF_XDP IPv4 port with a kernel UDP socket.
 */
class XskTransportTest {
    static final String MAC_A = "02:58:a0:00:00:01", MAC_B = "02:58:a0:00:00:02";
    static final String MAC_U = "02:58:a0:00:01:01", MAC_K = "02:58:a0:00:01:02";
    static final String MAC_C = "02:58:a0:00:02:01", MAC_D = "02:58:a0:00:02:02";
    static final int JOB = 7, TOKEN = 0x5EC12E7, NET0 = 0x0007_0000, NET1 = 0x0007_0001, MTU = 1500;
    static XskTestNet net;

    @BeforeAll
    static void up() {
        net = new XskTestNet();
        try {
            net.exec("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1");
            net.exec("sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1");
            net.veth("xa", MAC_A, "xb", MAC_B);
            // Mixed pair: "xu" is the AF_XDP side (no kernel address needed), "xk" the kernel side.
            net.veth("xu", MAC_U, "xk", MAC_K);
            net.exec("ip", "addr", "add", "10.88.0.2/24", "dev", "xk");
            net.exec("ip", "neigh", "replace", "10.88.0.1", "lladdr", MAC_U, "dev", "xk", "nud", "permanent");
            net.veth("xc", MAC_C, "xd", MAC_D);
            net.exec("ip", "addr", "add", "10.99.0.2/24", "dev", "xd");
            net.exec("ip", "neigh", "replace", "10.99.0.1", "lladdr", MAC_C, "dev", "xd", "nud", "permanent");
        } catch (RuntimeException | Error e) {
            net.close();
            throw e;
        }
    }

    @AfterAll
    static void down() {
        if (net != null) net.close();
    }

    static InetAddress ip(NetworkForm form, int host) throws Exception {
        return switch (form) {
            case IPV4 -> InetAddress.getByName("10.77.0." + host);
            case IPV6 -> InetAddress.getByName("fd00:77::" + host);
            case ID -> null;
        };
    }

    static Peer peer(NetworkForm form, String mac, int host) throws Exception {
        return form == NetworkForm.ID ? EthernetPeer.of(mac) : new EthernetIpPeer(EthernetPeer.of(mac).mac(), ip(form, host));
    }

    /** AF_XDP ports on both ends of the xa/xb pair: rank 0 on xa, rank 1 on xb (the first closed if the second fails). */
    static XskDatagramPort[] openPair(NetworkForm form) throws Exception {
        XskDatagramPort a = net.call(() -> new XskDatagramPort("xa", 0, form, MAC_A, ip(form, 1), 0x10, MTU, JOB, TOKEN, NET0));
        try {
            return new XskDatagramPort[]{a,
                    net.call(() -> new XskDatagramPort("xb", 0, form, MAC_B, ip(form, 2), 0x11, MTU, JOB, TOKEN, NET1))};
        } catch (RuntimeException | Error e) {
            a.close();
            throw e;
        }
    }

    static TransportConfig config(int rank) {
        return TransportConfig.builder(rank, JOB, TOKEN).maxPayload(1400)
                .retransmitTimeouts(Duration.ofMillis(20), Duration.ofMillis(2), Duration.ofMillis(200)).build();
    }

    static MemorySegment pattern(Arena arena, int size, long seed) {
        MemorySegment s = arena.allocate(size, 64);
        for (long i = 0; i < size; i += 8) s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, (i + seed) * 0x9E3779B97F4A7C15L);
        return s;
    }

    @ParameterizedTest
    @EnumSource(NetworkForm.class)
    void eightMegabytesCrossAVethPairInEachForm(NetworkForm form) throws Exception {
        int size = 8 << 20;
        XskDatagramPort[] pair = openPair(form);
        XskDatagramPort a = pair[0], b = pair[1];
        assertEquals(MTU + 14 - form.outerHeaderLength(), a.maxDatagramLength());
        assertEquals(peer(form, MAC_A, 1), a.localPeer());
        AddressBook book = AddressBook.builder().add(0, NET0, peer(form, MAC_A, 1)).add(1, NET1, peer(form, MAC_B, 2)).build();
        try (ReliableTransport t0 = new ReliableTransport(config(0), book, a).start();
             ReliableTransport t1 = new ReliableTransport(config(1), book, b).start();
             Arena arena = Arena.ofShared()) {
            String attached = net.exec("ip", "-d", "link", "show", "xa");
            assertTrue(attached.contains("prog/xdp"), "XAF program attached natively: " + attached);
            MemorySegment src = pattern(arena, size, form.code());
            MemorySegment dst = arena.allocate(size, 64);
            MessageId id = new MessageId(JOB, 1, form.code());
            CompletableFuture<Void> got = t1.expect(0, id, dst);
            t0.send(1, id, src).get(60, TimeUnit.SECONDS);
            got.get(10, TimeUnit.SECONDS);
            assertEquals(-1L, src.mismatch(dst), "received bytes differ");
            assertEquals(0, t1.stats().crcFailures());
            assertEquals(0, b.checksumFailures(), "outer checksums of frames written by FrameWriter");
            assertTrue(b.socketStats().rxFrames() >= size / 1400, "data arrived through the AF_XDP socket: " + b.socketStats());
            assertTrue(a.socketStats().rxFrames() > 0, "ACKs arrived through the AF_XDP socket: " + a.socketStats());
        }
        // ReliableTransport.close closed the ports, which detached their XDP programs in the namespace.
        String links = net.exec("ip", "-d", "link", "show", "xa");
        assertFalse(links.contains("prog/xdp"), links);
    }

    /** As {@link IdleTransportTest} for UDP: an idle AF_XDP transport sleeps in poll(2) and wakes for work. */
    @Test
    void idleAfXdpTransportSleepsAndWakesForWork() throws Exception {
        NetworkForm form = NetworkForm.IPV4;
        XskDatagramPort[] pair = openPair(form);
        XskDatagramPort a = pair[0], b = pair[1];
        assertTrue(a.canAwaitReceive());
        IdleTransportTest.assertWakeupEndsAWait(a);

        AddressBook book = AddressBook.builder().add(0, NET0, peer(form, MAC_A, 1)).add(1, NET1, peer(form, MAC_B, 2)).build();
        var threads = java.lang.management.ManagementFactory.getThreadMXBean();
        try (ReliableTransport t0 = new ReliableTransport(config(0), book, a).start();
             ReliableTransport t1 = new ReliableTransport(config(1), book, b).start();
             Arena arena = Arena.ofShared()) {
            MemorySegment src = pattern(arena, 1 << 20, 5);
            MemorySegment dst = arena.allocate(1 << 20, 64);
            for (int step = 0; step < 3; step++) {
                Thread.sleep(300);
                long[] before = IdleTransportTest.loopCpuNanos(threads);
                Thread.sleep(1000);
                long[] after = IdleTransportTest.loopCpuNanos(threads);
                for (int rank = 0; rank < 2; rank++) {
                    long used = after[rank] - before[rank];
                    assertTrue(used < TimeUnit.MILLISECONDS.toNanos(50),
                            "idle AF_XDP event loop of rank " + rank + " used " + used / 1_000_000 + " ms of CPU in 1 s");
                }
                MessageId id = new MessageId(JOB, 10 + step, 0);
                dst.fill((byte) 0);
                CompletableFuture<Void> got = t1.expect(0, id, dst);
                t0.send(1, id, src).get(30, TimeUnit.SECONDS);
                got.get(30, TimeUnit.SECONDS);
                assertEquals(-1L, src.mismatch(dst), "step " + step);
            }
        }
    }

    @Test
    void afXdpIpv4PortInteroperatesWithAKernelUdpSocket() throws Exception {
        int size = 2 << 20;
        InetAddress xskIp = InetAddress.getByName("10.88.0.1"), kernelIp = InetAddress.getByName("10.88.0.2");
        XskDatagramPort x = net.call(() -> new XskDatagramPort("xu", 0, NetworkForm.IPV4, MAC_U, xskIp, 0, MTU, JOB, TOKEN, NET0));
        UdpDatagramPort k;
        try {
            k = NetworkNamespace.call(net.name, () -> new UdpDatagramPort(new InetSocketAddress(kernelIp, 9450)));
        } catch (RuntimeException | Error e) {
            x.close();
            throw e;
        }
        long csumErrorsBefore = net.udpCounter("InCsumErrors");
        long inBefore = net.udpCounter("InDatagrams");
        AddressBook xBook = AddressBook.builder().add(0, NET0, x.localPeer())
                .add(1, NET1, new EthernetIpPeer(EthernetPeer.of(MAC_K).mac(), kernelIp)).build();
        AddressBook kBook = AddressBook.builder().add(0, NET0, new InetPeer(new InetSocketAddress(xskIp, 9450)))
                .add(1, NET1, k.localPeer()).build();
        try (ReliableTransport tx = new ReliableTransport(config(0), xBook, x).start();
             ReliableTransport tk = new ReliableTransport(config(1), kBook, k).start();
             Arena arena = Arena.ofShared()) {
            // AF_XDP -> kernel
            MemorySegment src = pattern(arena, size, 11);
            MemorySegment dst = arena.allocate(size, 64);
            MessageId id = new MessageId(JOB, 2, 0);
            CompletableFuture<Void> got = tk.expect(0, id, dst);
            tx.send(1, id, src).get(60, TimeUnit.SECONDS);
            got.get(10, TimeUnit.SECONDS);
            assertEquals(-1L, src.mismatch(dst), "kernel side received different bytes");
            // kernel -> AF_XDP
            MemorySegment back = pattern(arena, size, 12);
            MemorySegment dst2 = arena.allocate(size, 64);
            MessageId id2 = new MessageId(JOB, 3, 0);
            CompletableFuture<Void> got2 = tx.expect(1, id2, dst2);
            tk.send(0, id2, back).get(60, TimeUnit.SECONDS);
            got2.get(10, TimeUnit.SECONDS);
            assertEquals(-1L, back.mismatch(dst2), "AF_XDP side received different bytes");

            assertEquals(csumErrorsBefore, net.udpCounter("InCsumErrors"), "kernel rejected UDP checksums of AF_XDP frames");
            assertTrue(net.udpCounter("InDatagrams") - inBefore >= size / 1400, "the kernel's UDP layer received the data");
            assertEquals(0, x.checksumFailures(), "UDP/IPv4 checksums of the kernel's frames, checked on the AF_XDP side");
            assertTrue(x.socketStats().rxFrames() >= size / 1400, x.socketStats().toString());
            assertEquals(0, tk.stats().crcFailures());
            assertEquals(0, tx.stats().crcFailures());
        }
    }

    /**
     * The AF_XDP port checks what the kernel's UDP layer would have checked: with TX checksum offload on, a veth
     * sender leaves the UDP checksum partial, and those frames are counted and dropped; with offload off the same
     * datagrams are delivered.
     */
    @Test
    void framesWithBadUdpChecksumsAreCountedAndDropped() throws Exception {
        InetAddress xskIp = InetAddress.getByName("10.99.0.1");
        XskDatagramPort x = net.call(() -> new XskDatagramPort("xc", 0, NetworkForm.IPV4, MAC_C, xskIp, 0, MTU, JOB, TOKEN, NET0));
        try (x; UdpDatagramPort k = NetworkNamespace.call(net.name,
                () -> new UdpDatagramPort(new InetSocketAddress("10.99.0.2", 9450)));
             Arena arena = Arena.ofConfined()) {
            int payload = 256, length = XafHeader.LENGTH + payload, n = 50;
            MemorySegment d = arena.allocate(length);
            for (int i = 0; i < payload; i++) d.set(ValueLayout.JAVA_BYTE, XafHeader.LENGTH + i, (byte) (i * 7 + 1));
            new XafHeader().wrap(d, 0).init().networkId(NET0).jobId(JOB).jobToken(TOKEN).srcRank(1).dstRank(0)
                    .payloadLength(payload).payloadSum(InternetChecksum.sum(d, XafHeader.LENGTH, payload));
            InetPeer to = new InetPeer(new InetSocketAddress(xskIp, 9450));
            int[] delivered = {0};
            DatagramHandler h = (seg, off, len) -> {
                assertEquals(length, len);
                assertEquals(-1L, MemorySegment.mismatch(seg, off + XafHeader.LENGTH, off + len, d, XafHeader.LENGTH, length));
                delivered[0]++;
            };

            net.exec("ethtool", "-K", "xd", "tx", "on");
            for (int i = 0; i < n; i++) assertTrue(k.send(d, 0, length, to));
            k.flush();
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (x.checksumFailures() < n && System.nanoTime() < deadline) x.poll(h, 64);
            assertEquals(n, x.checksumFailures(), "partial checksums counted");
            assertEquals(0, delivered[0], "no frame with a bad checksum reaches the handler");

            net.exec("ethtool", "-K", "xd", "tx", "off");
            for (int i = 0; i < n; i++) assertTrue(k.send(d, 0, length, to));
            k.flush();
            deadline = System.nanoTime() + 5_000_000_000L;
            while (delivered[0] < n && System.nanoTime() < deadline) x.poll(h, 64);
            assertEquals(n, delivered[0], "complete checksums pass");
            assertEquals(n, x.checksumFailures());
        }
    }

    @Test
    void wrongPeerTypesAndAddressesAreRejectedClearly() throws Exception {
        XskDatagramPort v4 = net.call(() -> new XskDatagramPort("xa", 0, NetworkForm.IPV4, MAC_A, ip(NetworkForm.IPV4, 1), 0, MTU, JOB, TOKEN, NET0));
        try (v4; Arena arena = Arena.ofConfined()) {
            MemorySegment d = arena.allocate(64);
            var e1 = assertThrows(IllegalArgumentException.class, () -> v4.send(d, 0, 64, EthernetPeer.of(MAC_B)));
            assertTrue(e1.getMessage().contains("EthernetIpPeer"), e1.getMessage());
            var e2 = assertThrows(IllegalArgumentException.class, () -> v4.send(d, 0, 64, InetPeer.of("10.77.0.2", 9450)));
            assertTrue(e2.getMessage().contains("EthernetIpPeer"), e2.getMessage());
            var e3 = assertThrows(IllegalArgumentException.class, () -> v4.send(d, 0, 64, EthernetIpPeer.of(MAC_B, "fd00::2")));
            assertTrue(e3.getMessage().contains("address family"), e3.getMessage());
            var e4 = assertThrows(IllegalArgumentException.class, () -> v4.send(d, 0, 4000, EthernetIpPeer.of(MAC_B, "10.77.0.2")));
            assertTrue(e4.getMessage().contains("4000"), e4.getMessage());
        }
        XskDatagramPort id = net.call(() -> new XskDatagramPort("xa", 0, NetworkForm.ID, MAC_A, null, 1, MTU, JOB, TOKEN, NET0));
        try (id; Arena arena = Arena.ofConfined()) {
            var e = assertThrows(IllegalArgumentException.class,
                    () -> id.send(arena.allocate(64), 0, 64, EthernetIpPeer.of(MAC_B, "10.77.0.2")));
            assertTrue(e.getMessage().contains("EthernetPeer"), e.getMessage());
        }
        assertThrows(IllegalStateException.class, () -> id.poll((seg, off, len) -> { }, 1), "poll after close");
        var e5 = assertThrows(IllegalArgumentException.class, () -> net.call(
                () -> new XskDatagramPort("xa", 0, NetworkForm.ID, MAC_A, ip(NetworkForm.IPV4, 1), 1, MTU, JOB, TOKEN, NET0)));
        assertTrue(e5.getMessage().contains("ID form has no IP"), e5.getMessage());
        var e6 = assertThrows(IllegalArgumentException.class, () -> net.call(
                () -> new XskDatagramPort("xa", 0, NetworkForm.IPV6, MAC_A, ip(NetworkForm.IPV4, 1), 1, MTU, JOB, TOKEN, NET0)));
        assertTrue(e6.getMessage().contains("IPv6"), e6.getMessage());
    }
}
