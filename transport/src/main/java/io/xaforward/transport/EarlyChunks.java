package io.xaforward.transport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * DATA chunks that arrived before their message was expected, held until the receive is posted instead of dropped.
 *
 * <p>Why: ranks drift apart. One that finishes its backward pass (or a phase of the all-reduce) first sends the
 * next bucket to a peer that is still computing; dropping those chunks made the sender resend them after a NACK,
 * a SACK gap or a timeout, which in training on this machine was two thirds of all retransmissions (4122
 * unexpected drops against 6373 retransmissions in a ten-step gateway-bound job) and put the sender's congestion
 * window back to two chunks on every timeout. Holding them costs one copy of the chunk's data; a resend costs a
 * datagram, a seal and an open at both ends and a round trip.
 *
 * <p>Bounded and allocation-free after warm-up: slots of {@code slotBytes} (the largest chunk) in pages of
 * {@link #PAGE_SLOTS}, allocated the first time they are needed and kept for the transport's life, up to
 * {@code capacitySlots}; per-slot fields in arrays; one singly linked list per peer rank, in arrival order. Chunks
 * only enter after their seal checked out, so with mac or encrypt a forger cannot fill it (in crc32c mode anyone who
 * reaches the port can, as they can already send garbage that costs a CRC each); when it is full a chunk is dropped
 * and counted as before. A held chunk is dropped when older than the ACK timeout, after which its sender has given
 * up on the message. Event-loop thread only.
 */
final class EarlyChunks {
    /** Slots allocated together: 256 chunks of 1.4 kB are 360 kB. */
    static final int PAGE_SLOTS = 256;
    private static final int NONE = -1;

    private final int slotBytes;
    private final int capacitySlots;
    private final MemorySegment[] pages;
    private final int[] step, bucket, count, index, length, next;
    private final long[] arrivedNanos;
    private final int[] headOfPeer;
    private final int[] tailOfPeer;
    private final int[] heldOfPeer;
    private final int[] free;
    private int freeTop;
    private int fresh;
    private int held;

    /** Called for each held chunk that a newly posted receive takes. */
    interface Taker {
        void take(int index, int count, MemorySegment segment, long offset, int length);
    }

    /**
     * @param capacitySlots chunks held at most (0: none; every early chunk is dropped)
     * @param slotBytes     largest chunk data length
     * @param rankLimit     ranks are below this
     */
    EarlyChunks(int capacitySlots, int slotBytes, int rankLimit) {
        if (capacitySlots < 0 || slotBytes < 1) {
            throw new IllegalArgumentException("capacity " + capacitySlots + ", slot " + slotBytes);
        }
        this.slotBytes = slotBytes;
        this.capacitySlots = capacitySlots;
        pages = new MemorySegment[(capacitySlots + PAGE_SLOTS - 1) / PAGE_SLOTS];
        step = new int[capacitySlots];
        bucket = new int[capacitySlots];
        count = new int[capacitySlots];
        index = new int[capacitySlots];
        length = new int[capacitySlots];
        next = new int[capacitySlots];
        arrivedNanos = new long[capacitySlots];
        free = new int[capacitySlots];
        headOfPeer = new int[rankLimit];
        tailOfPeer = new int[rankLimit];
        heldOfPeer = new int[rankLimit];
        Arrays.fill(headOfPeer, NONE);
    }

    /** Chunks held now. */
    int held() {
        return held;
    }

    /** Chunks held now from {@code rank}. */
    int heldFrom(int rank) {
        return heldOfPeer[rank];
    }

    /**
     * Keeps a copy of chunk {@code chunkIndex} of message ({@code msgStep}, {@code msgBucket}, {@code chunkCount})
     * from {@code rank}; false when there is no room (or the chunk is larger than a slot).
     */
    boolean hold(int rank, int msgStep, int msgBucket, int chunkCount, int chunkIndex,
                 MemorySegment segment, long offset, int bytes, long now) {
        if (bytes > slotBytes) return false;
        int slot;
        if (freeTop > 0) {
            slot = free[--freeTop];
        } else if (fresh < capacitySlots) {
            slot = fresh++;
            int page = slot / PAGE_SLOTS;
            if (pages[page] == null) {
                // Once per page for the transport's life: memory grows with what drift needs, up to the capacity.
                int slots = Math.min(PAGE_SLOTS, capacitySlots - page * PAGE_SLOTS);
                pages[page] = Arena.ofAuto().allocate((long) slots * slotBytes, 64);
            }
        } else {
            return false;
        }
        MemorySegment.copy(segment, offset, pages[slot / PAGE_SLOTS], (long) (slot % PAGE_SLOTS) * slotBytes, bytes);
        step[slot] = msgStep;
        bucket[slot] = msgBucket;
        count[slot] = chunkCount;
        index[slot] = chunkIndex;
        length[slot] = bytes;
        arrivedNanos[slot] = now;
        // Appended: chunks are handed over (and expire) in arrival order, so a message's cumulative point advances
        // and a NACK's bitmap starts at the first chunk dropped.
        next[slot] = NONE;
        if (headOfPeer[rank] == NONE) headOfPeer[rank] = slot;
        else next[tailOfPeer[rank]] = slot;
        tailOfPeer[rank] = slot;
        heldOfPeer[rank]++;
        held++;
        return true;
    }

    /**
     * Hands every held chunk of message ({@code msgStep}, {@code msgBucket}) from {@code rank} to {@code taker}
     * (whatever chunk count it claimed: the taker checks it against the posted receive) and frees their slots.
     *
     * @return chunks handed over
     */
    int take(int rank, int msgStep, int msgBucket, Taker taker) {
        int taken = 0;
        int prev = NONE;
        for (int slot = headOfPeer[rank]; slot != NONE; ) {
            int after = next[slot];
            if (step[slot] == msgStep && bucket[slot] == msgBucket) {
                unlink(rank, prev, slot);
                // Freed before the call: the taker may not hold chunks, and the slot's bytes stay intact until reused.
                taker.take(index[slot], count[slot], pages[slot / PAGE_SLOTS], (long) (slot % PAGE_SLOTS) * slotBytes,
                        length[slot]);
                taken++;
            } else {
                prev = slot;
            }
            slot = after;
        }
        return taken;
    }

    /** Drops the chunks from {@code rank} that arrived before {@code arrivedBefore}; returns how many. */
    int expire(int rank, long arrivedBefore, Expired expired) {
        int dropped = 0;
        int prev = NONE;
        for (int slot = headOfPeer[rank]; slot != NONE; ) {
            int after = next[slot];
            if (arrivedNanos[slot] - arrivedBefore < 0) {
                unlink(rank, prev, slot);
                expired.expired(step[slot], bucket[slot], count[slot], index[slot]);
                dropped++;
            } else {
                prev = slot;
            }
            slot = after;
        }
        return dropped;
    }

    /** Called for each chunk that {@link #expire} drops. */
    interface Expired {
        void expired(int step, int bucket, int count, int index);
    }

    private void unlink(int rank, int prev, int slot) {
        if (prev == NONE) headOfPeer[rank] = next[slot];
        else next[prev] = next[slot];
        if (tailOfPeer[rank] == slot) tailOfPeer[rank] = prev;
        free[freeTop++] = slot;
        heldOfPeer[rank]--;
        held--;
    }
}
