package io.xaforward.transport;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * What both sides keep of one message: its peer and id, the future its caller waits on, its chunk count and bitmap
 * words, and whether it is done. {@link InboundMessage} (receiver) and {@link OutboundMessage} (sender) add the rest.
 */
abstract sealed class MessageState permits InboundMessage, OutboundMessage {
    final PeerState peer;
    final MessageId id;
    final CompletableFuture<Void> future = new CompletableFuture<>();

    int chunkCount;
    int words;
    boolean done;

    MessageState(PeerState peer, MessageId id) {
        this.peer = peer;
        this.id = id;
    }

    boolean matches(int step, int bucketId) {
        return id.step() == step && id.bucketId() == bucketId;
    }

    /**
     * Fails this message, and says so, when its id was used recently ({@code completed}) or is in use ({@code active}):
     * "message M was already {@code verb} {@code preposition} rank R" or "message M {@code preposition} rank R
     * {@code inUse}".
     */
    boolean refuseReusedId(RecentMessages completed, List<? extends MessageState> active, String verb,
                           String preposition, String inUse) {
        if (completed.contains(peer.rank, id.step(), id.bucketId(), -1)) {
            future.completeExceptionally(new IllegalStateException("message " + id + " was already " + verb + " "
                    + preposition + " rank " + peer.rank + ": message ids must not be reused"));
            return true;
        }
        for (MessageState other : active) {
            if (other.matches(id.step(), id.bucketId())) {
                future.completeExceptionally(new IllegalStateException("message " + id + " " + preposition + " rank "
                        + peer.rank + " " + inUse));
                return true;
            }
        }
        return false;
    }
}
