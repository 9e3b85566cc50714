package io.xaforward.transport;

import io.xaforward.protocol.XafHeader;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The claim-then-write path of {@link UdpDatagramPort}: the datagram is written straight into the port's send
 * buffer, every datagram of a batch arrives in the order written, and bad claims fail clearly. (Allocation is not
 * asserted here: DatagramChannel's receive allocates a sender address per datagram, about 65 bytes.)
 */
class UdpClaimTest {

    @Test
    void claimedBatchesArriveWholeAndInOrder() throws Exception {
        InetAddress lo = InetAddress.getLoopbackAddress();
        try (UdpDatagramPort a = new UdpDatagramPort(new InetSocketAddress(lo, 0));
             UdpDatagramPort b = new UdpDatagramPort(new InetSocketAddress(lo, 0))) {
            assertTrue(a.supportsClaim());
            int payload = 1400, length = XafHeader.LENGTH + payload, batch = 64, batches = 200;
            int[] expected = {0}, bad = {0};
            DatagramHandler check = (segment, offset, len) -> {
                int seq = segment.get(ValueLayout.JAVA_INT_UNALIGNED, offset + XafHeader.LENGTH);
                if (seq != expected[0] || len != length) bad[0]++;
                expected[0] = seq + 1;
            };
            MemorySegment buffer = a.claimSegment();
            for (int round = 0; round < 3; round++) {
                expected[0] = 0;
                bad[0] = 0;
                int seq = 0;
                for (int k = 0; k < batches; k++) {
                    for (int i = 0; i < batch; i++) {
                        long at = a.claim(length, b.localPeer());
                        assertTrue(at >= 0, "room for a batch of " + batch);
                        buffer.set(ValueLayout.JAVA_INT_UNALIGNED, at + XafHeader.LENGTH, seq++);
                        assertTrue(a.commitClaim(), "datagram " + (seq - 1) + " refused");
                    }
                    a.flush();
                    long deadline = System.nanoTime() + 2_000_000_000L;
                    while (expected[0] < seq && System.nanoTime() < deadline) b.poll(check, 64);
                    assertEquals(seq, expected[0], "batch " + k + ": datagrams missing");
                }
                assertEquals(0, bad[0], "datagrams out of order or cut");
            }
        }
    }

    @Test
    void badClaimsFailClearly() {
        try (UdpDatagramPort a = new UdpDatagramPort(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            var wrongPeer = assertThrows(IllegalArgumentException.class, () -> a.claim(100, EthernetPeer.of("02:00:00:00:00:01")));
            assertTrue(wrongPeer.getMessage().contains("cannot send to"), wrongPeer.getMessage());
            var tooLong = assertThrows(IllegalArgumentException.class,
                    () -> a.claim(UdpDatagramPort.MAX_UDP_DATAGRAM + 1, a.localPeer()));
            assertTrue(tooLong.getMessage().contains("exceeds the port limit"), tooLong.getMessage());
            var noClaim = assertThrows(IllegalStateException.class, a::commitClaim);
            assertTrue(noClaim.getMessage().contains("without a claim"), noClaim.getMessage());
        }
    }
}
