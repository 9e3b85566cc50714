package io.xaforward.dataplane.xsk;

import io.xaforward.dataplane.NetNs;
import io.xaforward.dataplane.TestFrames;
import io.xaforward.dataplane.TestFrames.Numbered;
import io.xaforward.dataplane.Counter;
import io.xaforward.dataplane.CounterSnapshot;
import io.xaforward.dataplane.SharedLayouts;
import io.xaforward.dataplane.XdpAttachment;
import io.xaforward.dataplane.sys.PacketSocket;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * 10,000 XAF frames sent into one veth end with an AF_PACKET socket reach an AF_XDP socket on the other end through
 * the gateway program's LOCAL routes, in order and byte for byte (LOCAL delivery changes
 * nothing, PROTOCOL.md §7); frames that are not XAF still reach the kernel, where an AF_PACKET socket on the same interface sees them.
 */
class XskReceiveTest {
    private static final String A = "xa", B = "xb";

    private static final int FRAMES = 10_000, BATCH = 64, NET_A = 0x00C0FFEE, NET_B = 0x00000101, NON_XAF_EVERY = 1000;

    @Test
    void xafFramesArriveInUserSpaceAndOthersPassToTheKernel() throws Exception {
        try (NetNs ns = NetNs.create("xafxsk" + ProcessHandle.current().pid() % 100000 + "rx", n -> n.disableIpv6().vethPair(A, B))) {
            ns.call(() -> {
                try (XskSocket xsk = XskSocket.open(B, 0, XskConfig.defaults());
                     XskRedirect redirect = XskRedirect.install(xsk, SharedLayouts.FORM_ID, Numbered.JOB, Numbered.TOKEN, false, NET_A, NET_B);
                     PacketSocket sender = new PacketSocket(A, TestFrames.ETH_ID);
                     PacketSocket kernelSide = new PacketSocket(B, TestFrames.ETH_ID);
                     Arena arena = Arena.ofConfined()) {
                    assertEquals(XdpAttachment.Mode.NATIVE, redirect.attachment().mode());
                    assertFalse(xsk.isZeroCopy(), "veth offers copy mode only");
                    MemorySegment out = arena.allocate(2048);
                    MemorySegment expected = arena.allocate(2048);
                    CounterSnapshot before = redirect.dataplane().counters();

                    int[] received = {0};
                    FrameHandler check = (umem, offset, length) -> {
                        int seq = received[0]++;
                        int want = Numbered.write(expected, 0, seq, seq % 2 == 0 ? NET_A : NET_B);
                        assertEquals(want, length, "length of frame " + seq);
                        long at = MemorySegment.mismatch(umem, offset, offset + length, expected, 0, want);
                        assertEquals(-1, at, "frame " + seq + " differs at byte " + at);
                    };
                    int sent = 0, nonXaf = 0;
                    while (sent < FRAMES) {
                        int end = Math.min(FRAMES, sent + BATCH);
                        for (; sent < end; sent++) {
                            sender.send(out, Numbered.write(out, 0, sent, sent % 2 == 0 ? NET_A : NET_B));
                            if (sent % NON_XAF_EVERY == 0) {
                                sender.send(out, Numbered.writeNonXaf(out, sent));
                                nonXaf++;
                            }
                        }
                        long deadline = System.nanoTime() + 5_000_000_000L;
                        while (received[0] < sent) {
                            if (!xsk.awaitRx(100) && System.nanoTime() > deadline) {
                                fail("only " + received[0] + " of " + sent + " frames arrived; " + xsk.stats()
                                        + "; " + redirect.dataplane().counters().minus(before));
                            }
                            xsk.receive(check, BATCH);
                        }
                    }
                    assertFalse(xsk.awaitRx(100), "no frames beyond those sent");

                    XskStats stats = xsk.stats();
                    assertEquals(FRAMES, stats.rxFrames(), stats::toString);
                    assertEquals(0, stats.rxLost(), stats::toString);
                    assertEquals(0, stats.rxInvalid(), stats::toString);
                    CounterSnapshot delta = redirect.dataplane().counters().minus(before);
                    assertEquals(FRAMES, delta.packets(Counter.TO_LOCAL), delta::toString);
                    assertEquals(nonXaf, delta.packets(Counter.PASS_NON_XAF), delta::toString);

                    // The kernel got every non-XAF frame and none of the XAF ones.
                    int passed = 0, len;
                    while ((len = kernelSide.receive(out, 300)) >= 0) {
                        assertEquals(0x11, out.get(ValueLayout.JAVA_BYTE, Numbered.NEXT_HDR_OFFSET), "only non-XAF frames reach the stack");
                        int seq = Numbered.seqOf(out, 0);
                        assertEquals(0, seq % NON_XAF_EVERY);
                        assertEquals(Numbered.frameLength(seq), len);
                        passed++;
                    }
                    assertEquals(nonXaf, passed, "non-XAF frames seen by the kernel");
                    assertTrue(nonXaf >= 10);
                }
                return null;
            });
        }
    }
}
