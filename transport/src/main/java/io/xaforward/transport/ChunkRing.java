package io.xaforward.transport;

import java.util.Arrays;

/**
 * FIFO of (message, chunk, time) entries: the in-flight queue in send order (its head is the oldest transmission,
 * the first to time out) and the retransmission queue. Grows by doubling when full, which stops after warm-up.
 */
final class ChunkRing {
    private OutboundMessage[] messages;
    private int[] chunks;
    private long[] times;
    private int head;
    private int size;

    ChunkRing(int initialCapacity) {
        int capacity = Integer.highestOneBit(Math.max(2, initialCapacity) - 1) << 1;
        messages = new OutboundMessage[capacity];
        chunks = new int[capacity];
        times = new long[capacity];
    }

    int size() { return size; }
    boolean isEmpty() { return size == 0; }

    void addLast(OutboundMessage message, int chunk, long time) {
        if (size == messages.length) {
            grow();
        }
        int at = (head + size) & (messages.length - 1);
        messages[at] = message;
        chunks[at] = chunk;
        times[at] = time;
        size++;
    }

    OutboundMessage headMessage() { return messages[head]; }
    int headChunk() { return chunks[head]; }
    long headTime() { return times[head]; }

    void removeHead() {
        messages[head] = null;
        head = (head + 1) & (messages.length - 1);
        size--;
    }

    void clear() {
        while (size > 0) {
            removeHead();
        }
    }

    private void grow() {
        int capacity = messages.length;
        OutboundMessage[] m = new OutboundMessage[capacity * 2];
        int[] c = new int[capacity * 2];
        long[] t = new long[capacity * 2];
        for (int i = 0; i < size; i++) {
            int from = (head + i) & (capacity - 1);
            m[i] = messages[from];
            c[i] = chunks[from];
            t[i] = times[from];
        }
        Arrays.fill(messages, null);
        messages = m;
        chunks = c;
        times = t;
        head = 0;
    }
}
