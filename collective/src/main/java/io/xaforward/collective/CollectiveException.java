package io.xaforward.collective;

/**
 * A collective operation failed: a message to or from a peer failed, or the local rank was given inconsistent input.
 * {@link #rank()} names the peer rank held responsible (-1 when none is), so a training driver can report which rank
 * to look at.
 */
public class CollectiveException extends RuntimeException {
    private final int rank;

    public CollectiveException(int rank, String message, Throwable cause) {
        super(message, cause);
        this.rank = rank;
    }

    /** The peer rank this failure points at, or -1. */
    public int rank() {
        return rank;
    }
}
