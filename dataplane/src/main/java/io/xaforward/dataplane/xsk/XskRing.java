package io.xaforward.dataplane.xsk;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * Flyweight over one of the four single-producer/single-consumer rings an AF_XDP socket shares with the kernel.
 *
 * <p>Each ring is an mmapped region holding a producer index, a consumer index, a flags word and an array of
 * {@code size} (a power of two) entries; indices are free-running unsigned 32-bit counters and an entry lives at
 * {@code index & (size - 1)}. The side that owns an index publishes it with a release store after writing (or
 * reading) the entries; the other side reads it with an acquire load before touching them. As libxdp does, each
 * side keeps a cached copy of the peer's index and only re-reads the shared one when the cache says the ring is
 * full (producer) or empty (consumer), so a batch costs one acquire load and one release store.
 *
 * <p>{@link Producer} is the user-space side of FILL and TX; {@link Consumer} the user-space side of RX and
 * COMPLETION. Entries are either 8-byte UMEM addresses (FILL, COMPLETION) or 16-byte {@code struct xdp_desc
 * {u64 addr; u32 len; u32 options;}} (RX, TX). Nothing here allocates; not thread-safe (one owner thread).
 */
public abstract sealed class XskRing permits XskRing.Producer, XskRing.Consumer {
    /** Bit in the flags word: the kernel needs a syscall to make progress (XDP_RING_NEED_WAKEUP). */
    public static final int NEED_WAKEUP = 1;
    /** Entry size of FILL and COMPLETION rings. */
    public static final int ADDR_ENTRY = 8;
    /** Entry size of RX and TX rings ({@code struct xdp_desc}). */
    public static final int DESC_ENTRY = 16;

    private static final VarHandle INDEX = ValueLayout.JAVA_INT.varHandle();

    final MemorySegment region;
    final long producerOffset, consumerOffset, flagsOffset, entriesOffset;
    final int size, mask;

    XskRing(MemorySegment region, long producerOffset, long consumerOffset, long flagsOffset, long entriesOffset, int size) {
        if (Integer.bitCount(size) != 1) throw new IllegalArgumentException("ring size " + size + " is not a power of two");
        this.region = region;
        this.producerOffset = producerOffset;
        this.consumerOffset = consumerOffset;
        this.flagsOffset = flagsOffset;
        this.entriesOffset = entriesOffset;
        this.size = size;
        this.mask = size - 1;
    }

    public final int size() { return size; }

    /** Whether the kernel asked for a wakeup syscall (only set when bound with XDP_USE_NEED_WAKEUP). */
    public final boolean needsWakeup() {
        return ((int) INDEX.getAcquire(region, flagsOffset) & NEED_WAKEUP) != 0;
    }

    final int loadAcquire(long offset) { return (int) INDEX.getAcquire(region, offset); }

    final void storeRelease(long offset, int value) { INDEX.setRelease(region, offset, value); }

    final long slot(int index, int entrySize) { return entriesOffset + (long) (index & mask) * entrySize; }

    /** Entry (u64 address) at absolute index {@code index} of a FILL/COMPLETION ring. */
    final long addrAt(int index) { return region.get(ValueLayout.JAVA_LONG, slot(index, ADDR_ENTRY)); }

    /**
     * User space produces, the kernel consumes (FILL, TX). Usage: {@code n = free(max)}, {@code i = reserve(n)},
     * write entries {@code i .. i+n-1}, {@link #submit()}.
     */
    public static final class Producer extends XskRing {
        private int cachedProducer;   // next index to reserve
        private int cachedConsumer;   // kernel's consumer index + size: the first index we may not write

        Producer(MemorySegment region, long producerOffset, long consumerOffset, long flagsOffset, long entriesOffset, int size) {
            super(region, producerOffset, consumerOffset, flagsOffset, entriesOffset, size);
            cachedProducer = loadAcquire(producerOffset);
            cachedConsumer = loadAcquire(consumerOffset) + size;
        }

        /** Free slots, up to {@code wanted}; re-reads the kernel's consumer index only when the cache falls short. */
        public int free(int wanted) {
            int free = cachedConsumer - cachedProducer;
            if (free >= wanted) return wanted;
            cachedConsumer = loadAcquire(consumerOffset) + size;
            free = cachedConsumer - cachedProducer;
            return Math.min(free, wanted);
        }

        /** Reserves {@code n} slots (the caller checked {@link #free}) and returns the absolute index of the first. */
        public int reserve(int n) {
            int first = cachedProducer;
            cachedProducer += n;
            return first;
        }

        /** FILL: offers the UMEM frame at {@code addr} to the kernel. */
        public void setAddr(int index, long addr) { region.set(ValueLayout.JAVA_LONG, slot(index, ADDR_ENTRY), addr); }

        /** TX: a frame of {@code length} bytes at UMEM offset {@code addr}. */
        public void setDesc(int index, long addr, int length) {
            long s = slot(index, DESC_ENTRY);
            region.set(ValueLayout.JAVA_LONG, s, addr);
            region.set(ValueLayout.JAVA_INT, s + 8, length);
            region.set(ValueLayout.JAVA_INT, s + 12, 0);
        }

        /** Publishes every reserved slot to the kernel (release store of the producer index). */
        public void submit() { storeRelease(producerOffset, cachedProducer); }

        /** Entries published but not yet taken by the kernel. */
        public int outstanding() { return loadAcquire(producerOffset) - loadAcquire(consumerOffset); }
    }

    /**
     * The kernel produces, user space consumes (RX, COMPLETION). Usage: {@code n = peek(max)}, read entries
     * {@code first() .. first()+n-1}, {@link #release(int) release(n)}.
     */
    public static final class Consumer extends XskRing {
        private int cachedConsumer;   // next index to read
        private int cachedProducer;   // kernel's producer index as last seen

        Consumer(MemorySegment region, long producerOffset, long consumerOffset, long flagsOffset, long entriesOffset, int size) {
            super(region, producerOffset, consumerOffset, flagsOffset, entriesOffset, size);
            cachedConsumer = loadAcquire(consumerOffset);
            cachedProducer = loadAcquire(producerOffset);
        }

        /** Entries ready to read, up to {@code max}; re-reads the kernel's producer index only when the cache is empty. */
        public int peek(int max) {
            int ready = cachedProducer - cachedConsumer;
            if (ready == 0) {
                cachedProducer = loadAcquire(producerOffset);
                ready = cachedProducer - cachedConsumer;
            }
            return Math.min(ready, max);
        }

        /** Absolute index of the first unread entry. */
        public int first() { return cachedConsumer; }

        /** COMPLETION: the UMEM address of a transmitted frame. */
        public long addr(int index) { return addrAt(index); }

        /** RX: UMEM offset of the received frame's first byte. */
        public long descAddr(int index) { return region.get(ValueLayout.JAVA_LONG, slot(index, DESC_ENTRY)); }

        /** RX: length of the received frame. */
        public int descLength(int index) { return region.get(ValueLayout.JAVA_INT, slot(index, DESC_ENTRY) + 8); }

        /** Hands {@code n} read entries back to the kernel (release store of the consumer index). */
        public void release(int n) {
            cachedConsumer += n;
            storeRelease(consumerOffset, cachedConsumer);
        }
    }
}
