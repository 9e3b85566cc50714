package io.xaforward.transport;

import io.xaforward.protocol.InternetChecksum;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.XafHeader;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;

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
                claimedBatchesArriveWholeAndInOrder(a, b);
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

    /**
     * Claim-then-write in batches of 64 (one TX ring publication and two kicks per batch): every datagram of every
     * batch arrives, in the order it was written, and the whole exchange allocates nothing per datagram.
     */
    private void claimedBatchesArriveWholeAndInOrder(XskDatagramPort a, XskDatagramPort b) {
        assertTrue(a.supportsClaim());
        int payload = 1000, length = XafHeader.LENGTH + payload, batch = 64, batches = 300;
        Peer toB = b.localPeer();
        MemorySegment umem = a.claimSegment();
        XafHeader header = new XafHeader();
        int[] expected = {0}, outOfOrder = {0};
        DatagramHandler check = (segment, offset, len) -> {
            int seq = segment.get(java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED, offset + XafHeader.LENGTH);
            if (seq != expected[0] || len != length) outOfOrder[0]++;
            expected[0] = seq + 1;
        };
        for (int round = 0; round < 2; round++) { // the second round is measured; the first warms the JIT up
            expected[0] = 0;
            outOfOrder[0] = 0;
            long before = mx.getCurrentThreadAllocatedBytes();
            int seq = 0;
            for (int k = 0; k < batches; k++) {
                for (int i = 0; i < batch; i++) {
                    long at = a.claim(length, toB);
                    if (at < 0) fail("no transmit frame free at datagram " + seq);
                    MemorySegment.copy(headerTemplate, 0, umem, at, XafHeader.LENGTH);
                    header.wrap(umem, at).payloadLength(payload);
                    umem.set(java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED, at + XafHeader.LENGTH, seq++);
                    // The UDP checksum is derived from payload_sum, and the receiving port verifies it.
                    header.payloadSum(InternetChecksum.sum(umem, at + XafHeader.LENGTH, payload));
                    assertTrue(a.commitClaim());
                }
                long deadline = System.nanoTime() + 2_000_000_000L;
                while (expected[0] < seq && System.nanoTime() < deadline) {
                    a.poll(check, 64); // kicks the batch out
                    b.poll(check, 256);
                }
                if (expected[0] != seq) fail("batch " + k + ": " + (seq - expected[0]) + " datagrams missing");
            }
            long allocated = mx.getCurrentThreadAllocatedBytes() - before;
            assertEquals(0, outOfOrder[0], "datagrams out of order or cut");
            if (round == 1) {
                assertTrue(allocated < 2L * batch * batches, allocated + " bytes allocated for " + batch * batches
                        + " claimed datagrams");
            }
        }
    }

    private static final MemorySegment headerTemplate = templateHeader();

    private static MemorySegment templateHeader() {
        MemorySegment t = Arena.ofAuto().allocate(XafHeader.LENGTH);
        new XafHeader().wrap(t, 0).init().networkId(NET1).jobId(JOB).jobToken(TOKEN);
        return t;
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
        SteadyStateTransfer.assertAllocatesNothingPerPacket(t0, t1, JOB);
        // The ports belong to the test's try-with-resources; the transports hold nothing else.
    }
}
