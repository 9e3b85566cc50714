package io.xaforward.testbed;

/** A command in (or about) a network namespace failed; the message carries the command line and its stderr. */
public final class NetnsException extends RuntimeException {
    public NetnsException(String message) {
        super(message);
    }

    public NetnsException(String message, Throwable cause) {
        super(message, cause);
    }
}
