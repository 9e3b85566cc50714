package io.xaforward.bench;

import io.xaforward.dataplane.sys.NetworkNamespace;
import io.xaforward.dataplane.sys.PacketSocket;
import io.xaforward.protocol.FrameWriter;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.OuterAddressing;
import io.xaforward.protocol.XafHeader;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.LockSupport;

/**
 * A socket sender: an AF_PACKET socket in the sending host that writes one frame per sendto, like any user-space
 * application whose packets enter the kernel as skbs. Every frame gets the next sequence number in chunk_index and
 * its outer headers rewritten (the UDP checksum is O(1) from the header's payload_sum). On veth such frames reach
 * the gateway with little headroom, so veth copies them before XDP runs: the fair comparison point between modes.
 */
public final class SkbSender {
    private SkbSender() {}

    /**
     * Sends for {@code durationNanos} from {@code ifname} in {@code ns}; {@code pps} &gt; 0 paces the sender, 0 sends
     * as fast as it can; sequence numbers start at {@code firstSeq}; the sending thread is pinned to {@code cpu} (-1: not pinned). {@code frame} is a complete frame of {@code form} built with {@code addressing}. Returns the
     * number of frames sent.
     */
    public static long run(String ns, String ifname, byte[] frame, NetworkForm form, OuterAddressing addressing,
                           long durationNanos, long pps, int etherType, int firstSeq, int cpu) {
        return NetworkNamespace.call(ns, () -> {
            if (cpu >= 0) CpuAffinity.pinCurrentThread(cpu); // a fresh thread per call: nothing to restore
            try (Arena arena = Arena.ofConfined(); PacketSocket socket = new PacketSocket(ifname, etherType)) {
                MemorySegment buf = arena.allocate(frame.length, 64);
                MemorySegment.copy(MemorySegment.ofArray(frame), 0, buf, 0, frame.length);
                XafHeader x = new XafHeader().wrap(buf, form.outerHeaderLength());
                FrameWriter writer = new FrameWriter();
                long start = System.nanoTime(), end = start + durationNanos;
                long sent = 0;
                while (true) {
                    long now = System.nanoTime();
                    if (now >= end) break;
                    if (pps > 0) {
                        long due = start + sent * 1_000_000_000L / pps;
                        if (due > now) {
                            LockSupport.parkNanos(Math.min(due - now, 1_000_000));
                            continue;
                        }
                    }
                    x.chunkIndex(firstSeq + (int) sent);
                    int len = writer.encapsulate(buf, form, addressing);
                    socket.send(buf, len);
                    sent++;
                }
                return sent;
            }
        });
    }
}
