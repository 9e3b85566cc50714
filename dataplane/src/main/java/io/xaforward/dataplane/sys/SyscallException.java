package io.xaforward.dataplane.sys;

/** A failed libc call, with the operation, errno and the system's text for it. */
public final class SyscallException extends RuntimeException {
    private final int errno;

    public SyscallException(String operation, int errno) {
        super(operation + ": " + Syscalls.strerror(errno) + " (errno " + errno + ")");
        this.errno = errno;
    }

    public int errno() { return errno; }
}
