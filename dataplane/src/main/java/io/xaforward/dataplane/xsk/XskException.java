package io.xaforward.dataplane.xsk;

/** An AF_XDP setup or I/O failure: the operation, the interface and queue, errno and its text, and a hint. */
public final class XskException extends RuntimeException {
    private final int errno;

    XskException(String message, int errno) {
        super(message);
        this.errno = errno;
    }

    /** errno of the failed call; 0 when the failure was detected without one. */
    public int errno() { return errno; }
}
