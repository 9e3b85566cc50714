package io.xaforward.collective;

/**
 * A collective operation did not finish in time: the operation timeout expired, or the transport gave up on a
 * message. {@link #rank()} is the (first) rank it was still waiting for; {@link #waitingFor()} lists all of them.
 */
public final class CollectiveTimeoutException extends CollectiveException {
    private final int[] waitingFor;

    public CollectiveTimeoutException(int[] waitingFor, String message, Throwable cause) {
        super(waitingFor.length > 0 ? waitingFor[0] : -1, message, cause);
        this.waitingFor = waitingFor.clone();
    }

    /** Every rank with an unfinished message when the operation gave up, ascending. */
    public int[] waitingFor() {
        return waitingFor.clone();
    }
}
