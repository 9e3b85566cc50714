package io.xaforward.transport;

import java.util.Arrays;
import java.util.Objects;

/**
 * Maps each rank to its network index identifier (the forwarding key written into every XAF header sent to that
 * rank) and to the backend address the local port sends to (the first hop: the peer itself, or a gateway).
 * Immutable once built, so the event loop reads it without locks.
 */
public final class AddressBook {
    private final int[] networkIds;
    private final Peer[] peers;

    private AddressBook(int[] networkIds, Peer[] peers) {
        this.networkIds = networkIds;
        this.peers = peers;
    }

    public static Builder builder() {
        return new Builder();
    }

    public boolean contains(int rank) {
        return rank >= 0 && rank < peers.length && peers[rank] != null;
    }

    public int networkId(int rank) {
        requireKnown(rank);
        return networkIds[rank];
    }

    public Peer peer(int rank) {
        requireKnown(rank);
        return peers[rank];
    }

    /** One past the highest rank in the book. */
    public int rankLimit() {
        return peers.length;
    }

    private void requireKnown(int rank) {
        if (!contains(rank)) {
            throw new IllegalArgumentException("rank " + rank + " is not in the address book");
        }
    }

    public static final class Builder {
        private int[] networkIds = new int[0];
        private Peer[] peers = new Peer[0];

        public Builder add(int rank, int networkId, Peer peer) {
            if (rank < 0 || rank > 0xFFFF) {
                throw new IllegalArgumentException("rank " + rank + " is outside [0, 65535]");
            }
            Objects.requireNonNull(peer, "peer");
            if (rank >= peers.length) {
                networkIds = Arrays.copyOf(networkIds, rank + 1);
                peers = Arrays.copyOf(peers, rank + 1);
            }
            if (peers[rank] != null) {
                throw new IllegalArgumentException("rank " + rank + " is already in the address book");
            }
            networkIds[rank] = networkId;
            peers[rank] = peer;
            return this;
        }

        public AddressBook build() {
            return new AddressBook(networkIds.clone(), peers.clone());
        }
    }
}
