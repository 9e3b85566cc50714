package io.xaforward.dataplane.xsk;

import io.xaforward.dataplane.NetNs;
import io.xaforward.dataplane.TestFrames.Numbered;
import io.xaforward.dataplane.Counter;
import io.xaforward.dataplane.SharedLayouts;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The steady-state hot path allocates (almost) nothing: one socket transmits batches of 32 frames (claim, copy,
 * submit, flush with completion reaping) to the peer veth, whose XDP program delivers them to a second socket
 * (receive with a handler, FILL recycling). The loop thread's allocated bytes are measured over ~10,000 frames
 * after a warm-up that lets the JIT compile the path.
 */
class XskAllocationTest {
    private static final String A = "xa", B = "xb";

    private static final int NET = 0x00ABCDEF, BATCH = 32, WARMUP_ROUNDS = 5000, MEASURED_ROUNDS = 320;
    /**
     * Budget for the measured loop. Once C2 has compiled it the loop allocates 0 bytes; an errno-capturing downcall
     * that is not compiled yet costs 40 bytes per syscall (one per batch). One object per frame would be >= 160 KB.
     */
    private static final long BUDGET_BYTES = 64 * 1024;

    /** Counts frames and checks they carry the expected sequence numbers, without allocating. */
    private static final class Counting implements FrameHandler {
        int received, badFrames;

        @Override
        public void onFrame(MemorySegment umem, long offset, int length) {
            if (Numbered.seqOf(umem, offset) != received || length != Numbered.frameLength(received)) badFrames++;
            received++;
        }
    }

    @Test
    void steadyStateTransmitAndReceiveAllocateAlmostNothing() throws Exception {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        try (NetNs ns = NetNs.create("xafxsk" + ProcessHandle.current().pid() % 100000 + "al", n -> n.disableIpv6().vethPair(A, B))) {
            ns.call(() -> {
                try (XskSocket sender = XskSocket.open(B, 0, XskConfig.small());
                     XskSocket receiver = XskSocket.open(A, 0, XskConfig.small());
                     XskRedirect redirect = XskRedirect.install(receiver, SharedLayouts.FORM_ID, Numbered.JOB, Numbered.TOKEN, false, NET)) {
                    Counting handler = new Counting();
                    int[] seq = {0};
                    Runnable round = () -> {
                        for (int i = 0; i < BATCH; i++) {
                            int s = seq[0]++;
                            int len = Numbered.frameLength(s);
                            long off = sender.claimTx(len);
                            if (off < 0) throw new AssertionError("no transmit frame for " + s);
                            Numbered.write(sender.umem(), off, s, NET);
                        }
                        sender.submitTx();
                        long deadline = System.nanoTime() + 5_000_000_000L;
                        while (sender.txInFlight() > 0 || handler.received < seq[0]) {
                            sender.flush();
                            if (receiver.awaitRx(0)) receiver.receive(handler, BATCH);
                            if (System.nanoTime() > deadline) {
                                throw new AssertionError("stalled at " + handler.received + "/" + seq[0] + ": tx "
                                        + sender.stats() + ", rx " + receiver.stats());
                            }
                        }
                    };
                    for (int r = 0; r < WARMUP_ROUNDS; r++) round.run();
                    long tid = Thread.currentThread().threadId();
                    long before = threads.getThreadAllocatedBytes(tid);
                    for (int r = 0; r < MEASURED_ROUNDS; r++) round.run();
                    long allocated = threads.getThreadAllocatedBytes(tid) - before;
                    int frames = MEASURED_ROUNDS * BATCH;
                    System.out.println("XskAllocationTest: " + allocated + " bytes allocated for " + frames
                            + " frames sent and received");
                    assertEquals(0, handler.badFrames, "frames out of order or wrong length");
                    assertEquals((WARMUP_ROUNDS + MEASURED_ROUNDS) * BATCH, handler.received);
                    assertEquals(handler.received, redirect.dataplane().counters().packets(Counter.TO_LOCAL));
                    assertEquals(0, receiver.stats().rxLost(), () -> receiver.stats().toString());
                    assertTrue(allocated < BUDGET_BYTES, allocated + " bytes allocated for " + frames + " frames");
                }
                return null;
            });
        }
    }
}
