package io.xaforward.transport;

/**
 * A fixed-size memory of the last {@code capacity} finished messages (peer rank, step, bucket, chunk count), oldest
 * overwritten first. The receiver uses it to answer retransmissions after a lost final ACK; both sides use it to
 * refuse a message id that was already used with the same peer. Allocation-free after construction.
 */
final class RecentMessages {
    private final int[] rank;
    private final int[] step;
    private final int[] bucket;
    private final int[] count;
    private int next;
    private int size;

    RecentMessages(int capacity) {
        rank = new int[capacity];
        step = new int[capacity];
        bucket = new int[capacity];
        count = new int[capacity];
    }

    void remember(int peerRank, int messageStep, int messageBucket, int chunkCount) {
        rank[next] = peerRank;
        step[next] = messageStep;
        bucket[next] = messageBucket;
        count[next] = chunkCount;
        next = (next + 1) % rank.length;
        size = Math.min(rank.length, size + 1);
    }

    /** True if the message was remembered with this chunk count ({@code chunkCount} < 0: any count). */
    boolean contains(int peerRank, int messageStep, int messageBucket, int chunkCount) {
        for (int i = 0; i < size; i++) {
            if (step[i] == messageStep && bucket[i] == messageBucket && rank[i] == peerRank
                    && (chunkCount < 0 || count[i] == chunkCount)) {
                return true;
            }
        }
        return false;
    }
}
