package io.xaforward.transport;

import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.XafHeader;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The steady-state send/poll path of {@link XskDatagramPort} allocates nothing per datagram: measured with the
 * thread's allocation counter, first on the bare port (raw datagrams across a veth pair), then under two
 * caller-driven reliable transports moving a 4 MB message (thousands of data packets and ACKs).
 */
class XskPortAllocationTest {
    static final String MAC_A = "02:58:a1:00:00:01", MAC_B = "02:58:a1:00:00:02";
    static final int JOB = 9, TOKEN = 0x70C3, NET0 = 0x0009_0000, NET1 = 0x0009_0001;
    final com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    @Test
    void sendAndPollAllocateNothingPerDatagram() throws Exception {
        try (XskTestNet net = new XskTestNet().veth("xa", MAC_A, "xb", MAC_B)) {
            InetAddress ipA = InetAddress.getByName("10.66.0.1"), ipB = InetAddress.getByName("10.66.0.2");
            XskDatagramPort a = net.call(() -> new XskDatagramPort("xa", 0, NetworkForm.IPV4, MAC_A, ipA, 0, 1500, JOB, TOKEN, NET0));
            XskDatagramPort b;
            try {
                b = net.call(() -> new XskDatagramPort("xb", 0, NetworkForm.IPV4, MAC_B, ipB, 0, 1500, JOB, TOKEN, NET1));
            } catch (RuntimeException | Error e) {
                a.close();
                throw e;
            }
            try (a; b) {
                rawDatagrams(a, b);
                transportTransfer(a, b);
            }
        }
    }

    private void rawDatagrams(XskDatagramPort a, XskDatagramPort b) {
        Peer toB = b.localPeer();
        int payload = 1400, length = XafHeader.LENGTH + payload;
        MemorySegment datagram = Arena.ofAuto().allocate(length, 64);
        new XafHeader().wrap(datagram, 0).init().networkId(NET1).jobId(JOB).jobToken(TOKEN).payloadLength(payload);
        long[] received = {0}, bytes = {0};
        DatagramHandler count = (segment, offset, len) -> {
            received[0]++;
            bytes[0] += len;
        };
        for (int round = 0; round < 3; round++) pump(a, b, datagram, length, toB, count, 20_000); // warm-up: JIT
        received[0] = 0;
        bytes[0] = 0;
        long before = mx.getCurrentThreadAllocatedBytes();
        pump(a, b, datagram, length, toB, count, 20_000);
        long allocated = mx.getCurrentThreadAllocatedBytes() - before;
        assertTrue(received[0] > 15_000, "received " + received[0] + " of 20000 raw datagrams");
        assertEquals(received[0] * length, bytes[0], "every datagram handed over whole");
        // The smallest Java object is 16 bytes, so anything allocated per send or per receive would cost at least
        // 20000 * 16 bytes. Below 2 bytes per datagram leaves room only for per-batch effects: the JIT sometimes
        // leaves one ~40-byte object per sendto(2) kick (one kick per 32 frames) in the FFM downcall.
        assertTrue(allocated < 2L * 20_000, allocated + " bytes allocated for 20000 sends and " + received[0] + " receives");
    }

    /** Sends {@code n} datagrams a -> b, polling b as it goes (and a, to kick the TX ring). */
    private static void pump(XskDatagramPort a, XskDatagramPort b, MemorySegment datagram, int length, Peer to,
                             DatagramHandler handler, int n) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        for (int sent = 0; sent < n && System.nanoTime() < deadline; ) {
            if (a.send(datagram, 0, length, to)) sent++;
            if ((sent & 31) == 0) {
                a.poll(handler, 64);
                b.poll(handler, 256);
            }
        }
        long drainUntil = System.nanoTime() + 50_000_000L;
        while (System.nanoTime() < drainUntil) {
            a.poll(handler, 64);
            b.poll(handler, 256);
        }
    }

    private void transportTransfer(XskDatagramPort a, XskDatagramPort b) {
        AddressBook book = AddressBook.builder().add(0, NET0, a.localPeer()).add(1, NET1, b.localPeer()).build();
        // Not started: this thread drives both event loops, so its allocation counter sees the whole hot path.
        ReliableTransport t0 = new ReliableTransport(TransportConfig.builder(0, JOB, TOKEN).maxPayload(1400).build(), book, a);
        ReliableTransport t1 = new ReliableTransport(TransportConfig.builder(1, JOB, TOKEN).maxPayload(1400).build(), book, b);
        int size = 4 << 20;
        MemorySegment source = Arena.ofAuto().allocate(size);
        MemorySegment dest = Arena.ofAuto().allocate(size);
        for (int round = 0; round < 6; round++) transfer(t0, t1, source, dest, round);
        long before = mx.getCurrentThreadAllocatedBytes();
        long packetsBefore = t0.stats().packetsSent() + t1.stats().packetsSent();
        transfer(t0, t1, source, dest, 100);
        long allocated = mx.getCurrentThreadAllocatedBytes() - before;
        long packets = t0.stats().packetsSent() + t1.stats().packetsSent() - packetsBefore;
        assertTrue(packets > 3000, "packets " + packets);
        assertTrue(allocated < 16_384, allocated + " bytes allocated for " + packets + " packets");
        // The ports belong to the test's try-with-resources; the transports hold nothing else.
    }

    private static void transfer(ReliableTransport t0, ReliableTransport t1, MemorySegment source, MemorySegment dest, int step) {
        MessageId id = new MessageId(JOB, step, 0);
        CompletableFuture<Void> received = t1.expect(0, id, dest);
        CompletableFuture<Void> sent = t0.send(1, id, source);
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (!(received.isDone() && sent.isDone()) && System.nanoTime() < deadline) {
            t0.doWork();
            t1.doWork();
        }
        assertTrue(sent.isDone() && !sent.isCompletedExceptionally() && received.isDone(),
                "transfer " + step + " did not complete within 20 s");
    }
}
