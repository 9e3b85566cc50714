package io.xaforward.dataplane.xsk;

import io.xaforward.dataplane.NetNs;
import io.xaforward.dataplane.TestFrames;
import io.xaforward.dataplane.TestFrames.Numbered;
import io.xaforward.dataplane.sys.PacketSocket;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * 10,000 frames written into claimed UMEM frames and flushed through an AF_XDP socket (copy mode) arrive at an
 * AF_PACKET socket on the peer veth, in order and byte for byte, and every transmit frame comes back through the
 * COMPLETION ring.
 */
class XskTransmitTest {
    private static final String A = "xa", B = "xb";

    private static final int FRAMES = 10_000, BATCH = 32, NET = 0x0000BEEF;

    @Test
    void claimedFramesLeaveInOrderByteIdentical() throws Exception {
        try (NetNs ns = NetNs.create("xafxsk" + ProcessHandle.current().pid() % 100000 + "tx", n -> n.disableIpv6().vethPair(A, B))) {
            ns.call(() -> {
                // Small TX pool (256 frames) so frames are recycled through the COMPLETION ring ~40 times.
                XskConfig cfg = new XskConfig(256, 256, 256, 256, 256, 256, false);
                try (XskSocket xsk = XskSocket.open(B, 0, cfg);
                     PacketSocket peer = new PacketSocket(A, TestFrames.ETH_ID);
                     Arena arena = Arena.ofConfined()) {
                    MemorySegment in = arena.allocate(2048);
                    MemorySegment expected = arena.allocate(2048);
                    int sent = 0, received = 0;
                    while (sent < FRAMES) {
                        int end = Math.min(FRAMES, sent + BATCH);
                        for (; sent < end; sent++) {
                            int len = Numbered.frameLength(sent);
                            if (sent % 2 == 0) {
                                long off = xsk.claimTx(len);
                                assertTrue(off >= 0, "a transmit frame is free for frame " + sent);
                                assertEquals(len, Numbered.write(xsk.umem(), off, sent, NET));
                            } else {
                                MemorySegment frame = xsk.claimTxSegment(len);
                                assertNotNull(frame, "a transmit frame is free for frame " + sent);
                                assertEquals(len, Numbered.write(frame, 0, sent, NET));
                            }
                        }
                        xsk.submitTx();
                        long deadline = System.nanoTime() + 5_000_000_000L;
                        while (xsk.txInFlight() > 0) {
                            xsk.flush();
                            if (System.nanoTime() > deadline) fail(xsk.txInFlight() + " frames never completed: " + xsk.stats());
                        }
                        for (; received < sent; received++) {
                            int len = peer.receive(in, 2000);
                            if (len < 0) fail("frame " + received + " did not arrive: " + xsk.stats());
                            int want = Numbered.write(expected, 0, received, NET);
                            assertEquals(want, len, "length of frame " + received + " (seq " + Numbered.seqOf(in, 0) + ")");
                            long at = MemorySegment.mismatch(in, 0, len, expected, 0, want);
                            assertEquals(-1, at, "frame " + received + " differs at byte " + at);
                        }
                    }
                    assertEquals(-1, peer.receive(in, 100), "no frames beyond those sent");
                    XskStats stats = xsk.stats();
                    assertEquals(FRAMES, stats.txFrames(), stats::toString);
                    assertEquals(0, stats.txInvalid(), stats::toString);
                    assertEquals(256, xsk.frames().freeTxFrames(), "every transmit frame is back in the pool");
                }
                return null;
            });
        }
    }
}
