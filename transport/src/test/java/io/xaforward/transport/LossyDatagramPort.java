package io.xaforward.transport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;

/**
 * Wraps any {@link DatagramPort} and impairs what it sends: drops, duplicates, holds one datagram back so that it
 * leaves after the next one (reordering) and flips a payload bit, with a seeded {@link Random}. Lets the reliability
 * layer be tested over real sockets; {@link LoopbackNetwork} does the same in memory. Not thread-safe, like the ports.
 */
public final class LossyDatagramPort implements DatagramPort {
    private static final int HEADER_BYTES_UNTOUCHED = 48;

    private final DatagramPort inner;
    private volatile LoopbackNetwork.Impairments impairments;
    private final Random random;
    private final MemorySegment scratch;
    private final MemorySegment held;
    private int heldLength = -1;
    private Peer heldPeer;
    private volatile long dropped;   // written by the event loop only
    private volatile long corrupted;

    public LossyDatagramPort(DatagramPort inner, LoopbackNetwork.Impairments impairments, long seed) {
        this.inner = inner;
        this.impairments = impairments;
        this.random = new Random(seed);
        Arena arena = Arena.ofAuto();
        this.scratch = arena.allocate(inner.maxDatagramLength());
        this.held = arena.allocate(inner.maxDatagramLength());
    }

    @Override
    public int maxDatagramLength() {
        return inner.maxDatagramLength();
    }

    @Override
    public boolean send(MemorySegment buffer, long offset, int length, Peer destination) {
        LoopbackNetwork.Impairments impairments = this.impairments;
        if (impairments.lossRate() > 0 && random.nextDouble() < impairments.lossRate()) {
            dropped++;
            return true; // lost on the wire: the sender cannot tell
        }
        MemorySegment.copy(buffer, offset, scratch, 0, length);
        boolean corrupt = length > HEADER_BYTES_UNTOUCHED && impairments.corruptRate() > 0
                && random.nextDouble() < impairments.corruptRate();
        if (corrupt) {
            long at = HEADER_BYTES_UNTOUCHED + random.nextInt(length - HEADER_BYTES_UNTOUCHED);
            scratch.set(ValueLayout.JAVA_BYTE, at,
                    (byte) (scratch.get(ValueLayout.JAVA_BYTE, at) ^ (1 << random.nextInt(8))));
            corrupted++;
        }
        if (heldLength < 0 && impairments.reorderRate() > 0 && random.nextDouble() < impairments.reorderRate()) {
            MemorySegment.copy(scratch, 0, held, 0, length);
            heldLength = length;
            heldPeer = destination;
            return true;
        }
        boolean sent = inner.send(scratch, 0, length, destination);
        if (impairments.duplicateRate() > 0 && random.nextDouble() < impairments.duplicateRate()) {
            inner.send(scratch, 0, length, destination);
            if (corrupt) {
                corrupted++; // the copy carries the same damage
            }
        }
        if (heldLength >= 0) {
            inner.send(held, 0, heldLength, heldPeer);
            heldLength = -1;
            heldPeer = null;
        }
        return sent;
    }

    @Override
    public void flush() {
        inner.flush();
    }

    @Override
    public int poll(DatagramHandler handler, int limit) {
        return inner.poll(handler, limit);
    }

    @Override
    public boolean receivedFrom(Peer peer) {
        return inner.receivedFrom(peer);
    }

    @Override
    public Peer localPeer() {
        return inner.localPeer();
    }

    @Override
    public int flows() {
        return inner.flows();
    }

    /** Changes the fault rates from now on (any thread). */
    public void impairments(LoopbackNetwork.Impairments impairments) {
        this.impairments = impairments;
    }

    /** Datagrams dropped on purpose. */
    public long dropped() { return dropped; }
    /** Corrupted datagrams handed to the inner port (a duplicated corrupted datagram counts twice). */
    public long corrupted() { return corrupted; }

    @Override
    public void close() {
        inner.close();
    }
}
