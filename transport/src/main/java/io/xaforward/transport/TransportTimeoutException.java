package io.xaforward.transport;

/** A message made no progress within the configured time: the peer is down, unreachable or never expected it. */
public final class TransportTimeoutException extends RuntimeException {
    private final int rank;

    public TransportTimeoutException(int rank, String message) {
        super(message);
        this.rank = rank;
    }

    /** The rank that did not answer (or did not send). */
    public int rank() {
        return rank;
    }
}
