package io.xaforward.transport;

import io.xaforward.dataplane.sys.NetworkNamespace;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.*;

/** The reliable transport over the identifier-native form (AF_PACKET) across a veth pair in a test namespace. */
class PacketTransportTest {
    static final String NS = "xpkt" + Integer.toHexString(new Random().nextInt(0x1000, 0x10000));
    static final String MAC_A = "02:58:aa:00:00:01", MAC_B = "02:58:aa:00:00:02";

    static void sh(String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), String.join(" ", cmd) + ": " + new String(p.getInputStream().readAllBytes()));
    }

    @BeforeAll
    static void up() throws Exception {
        sh("ip", "netns", "add", NS);
        sh("ip", "-n", NS, "link", "add", "pa", "address", MAC_A, "type", "veth", "peer", "name", "pb", "address", MAC_B);
        sh("ip", "-n", NS, "link", "set", "pa", "up");
        sh("ip", "-n", NS, "link", "set", "pb", "up");
    }

    @AfterAll
    static void down() throws Exception {
        sh("ip", "netns", "del", NS);
    }

    @Test
    void fourMegabytesCrossAnIdentifierNativeLink() throws Exception {
        int size = 4 << 20;
        AddressBook book = AddressBook.builder()
                .add(0, 0x0001_0000, EthernetPeer.of(MAC_A))
                .add(1, 0x0001_0001, EthernetPeer.of(MAC_B))
                .build();
        PacketDatagramPort pa = NetworkNamespace.call(NS, () -> new PacketDatagramPort("pa", MAC_A, 0x10001, 1500));
        PacketDatagramPort pb = NetworkNamespace.call(NS, () -> new PacketDatagramPort("pb", MAC_B, 0x10002, 1500));
        assertEquals(1500 - 12, pa.maxDatagramLength());
        var cfg = (java.util.function.IntFunction<TransportConfig>) r -> TransportConfig.builder(r, 1, 99)
                .maxPayload(1400).retransmitTimeouts(Duration.ofMillis(20), Duration.ofMillis(2), Duration.ofMillis(200)).build();
        try (ReliableTransport t0 = new ReliableTransport(cfg.apply(0), book, pa).start();
             ReliableTransport t1 = new ReliableTransport(cfg.apply(1), book, pb).start()) {
            Arena arena = Arena.ofAuto();
            MemorySegment src = arena.allocate(size, 64);
            for (long i = 0; i < size; i += 8) src.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 0x9E3779B97F4A7C15L);
            MemorySegment dst = arena.allocate(size, 64);
            MessageId id = new MessageId(1, 3, 0);
            CompletableFuture<Void> got = t1.expect(0, id, dst);
            t0.send(1, id, src).get(60, TimeUnit.SECONDS);
            got.get(10, TimeUnit.SECONDS);
            assertEquals(-1L, src.mismatch(dst));
            assertEquals(0, t1.stats().crcFailures());
        }
    }

    @Test
    void rejectsIpPeers() throws Exception {
        PacketDatagramPort p = NetworkNamespace.call(NS, () -> new PacketDatagramPort("pa", MAC_A, 1, 1500));
        try (p; Arena a = Arena.ofConfined()) {
            var e = assertThrows(IllegalArgumentException.class, () -> p.send(a.allocate(64), 0, 64, InetPeer.of("127.0.0.1", 1)));
            assertTrue(e.getMessage().contains("EthernetPeer"), e.getMessage());
        }
    }
}
