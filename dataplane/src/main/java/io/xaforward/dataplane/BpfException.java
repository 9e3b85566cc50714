package io.xaforward.dataplane;

/**
 * A libbpf or kernel call failed. Carries the operation (with its arguments, e.g.
 * {@code bpf_link_create(BPF_XDP, ifindex 7 'veth0', native)}), the positive errno, its strerror text and, for program loads,
 * the verifier log libbpf printed, so that a failure explains itself without strace or bpftool.
 */
public final class BpfException extends RuntimeException {
    private final String operation;
    private final int errno;
    private final String verifierLog;

    public BpfException(String operation, int errno, String verifierLog) {
        super(format(operation, errno, verifierLog));
        this.operation = operation;
        this.errno = Math.abs(errno);
        this.verifierLog = verifierLog == null ? "" : verifierLog;
    }

    public BpfException(String operation, int errno) {
        this(operation, errno, null);
    }

    private static String format(String operation, int errno, String log) {
        int e = Math.abs(errno);
        String msg = operation + ": " + LibBpf.strerror(e) + " (errno " + e + ")";
        if (log != null && !log.isBlank()) {
            msg += "\n--- libbpf/verifier log ---\n" + log.strip();
        }
        return msg;
    }

    /** The failed call and its arguments. */
    public String operation() { return operation; }

    /** Positive errno value (e.g. 2 for ENOENT). */
    public int errno() { return errno; }

    /** What libbpf printed while the failing call ran (the verifier log for loads); empty when nothing. */
    public String verifierLog() { return verifierLog; }
}
