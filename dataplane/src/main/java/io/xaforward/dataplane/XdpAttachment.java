package io.xaforward.dataplane;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One XDP program attached to one interface. Native (driver) mode is the default because that is where XDP is fast;
 * generic (SKB) mode is used only when the caller explicitly allows the fallback, and the fallback is logged.
 * Attaching never replaces a program someone else attached (XDP_FLAGS_UPDATE_IF_NOEXIST), and {@link #detach} removes
 * only our own program (it passes our fd as the expected old program), restoring the interface to what it was.
 */
public final class XdpAttachment implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(XdpAttachment.class.getName());

    static final int XDP_FLAGS_UPDATE_IF_NOEXIST = 1, XDP_FLAGS_SKB_MODE = 2, XDP_FLAGS_DRV_MODE = 4;
    private static final int ENODEV = 19;

    /** How the program runs on the interface. */
    public enum Mode {
        NATIVE(XDP_FLAGS_DRV_MODE, "native"), GENERIC(XDP_FLAGS_SKB_MODE, "generic");

        final int flag;
        final String label;

        Mode(int flag, String label) { this.flag = flag; this.label = label; }
    }

    private final String ifname;
    private final int ifindex;
    private final int progFd;
    private final Mode mode;
    private boolean attached = true;

    private XdpAttachment(String ifname, int ifindex, int progFd, Mode mode) {
        this.ifname = ifname;
        this.ifindex = ifindex;
        this.progFd = progFd;
        this.mode = mode;
    }

    /**
     * Attaches {@code progFd} to {@code ifname} in native mode; if that fails and {@code allowGenericFallback} is true,
     * tries generic mode and logs a warning.
     *
     * @throws BpfException when the interface is missing or the kernel refuses (e.g. another program is attached)
     */
    public static XdpAttachment attach(int progFd, String ifname, boolean allowGenericFallback) {
        int ifindex = LibBpf.ifNameToIndex(ifname);
        int rc = LibBpf.xdpAttach(ifindex, progFd, XDP_FLAGS_UPDATE_IF_NOEXIST | Mode.NATIVE.flag, MemorySegment.NULL);
        if (rc == 0) {
            return new XdpAttachment(ifname, ifindex, progFd, Mode.NATIVE);
        }
        BpfException nativeFailure = new BpfException(op(ifindex, ifname, Mode.NATIVE), rc);
        if (!allowGenericFallback) {
            throw nativeFailure;
        }
        LOG.log(System.Logger.Level.WARNING, "native XDP failed on " + ifname + " (" + nativeFailure.getMessage()
                + "); falling back to generic (SKB) mode as the caller allowed: expect much lower performance");
        rc = LibBpf.xdpAttach(ifindex, progFd, XDP_FLAGS_UPDATE_IF_NOEXIST | Mode.GENERIC.flag, MemorySegment.NULL);
        if (rc != 0) {
            BpfException e = new BpfException(op(ifindex, ifname, Mode.GENERIC), rc);
            e.addSuppressed(nativeFailure);
            throw e;
        }
        return new XdpAttachment(ifname, ifindex, progFd, Mode.GENERIC);
    }

    private static String op(int ifindex, String ifname, Mode mode) {
        return "bpf_xdp_attach(ifindex " + ifindex + " '" + ifname + "', " + mode.label + ")";
    }

    public String ifname() { return ifname; }
    public int ifindex() { return ifindex; }
    public Mode mode() { return mode; }
    public boolean isAttached() { return attached; }

    /** The id of the program attached to {@code ifindex} in {@code mode}, 0 when none. */
    public static int attachedProgramId(int ifindex, Mode mode) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment id = arena.allocate(ValueLayout.JAVA_INT);
            int rc = LibBpf.xdpQueryId(ifindex, mode.flag, id);
            if (rc != 0) throw new BpfException("bpf_xdp_query_id(ifindex " + ifindex + ")", rc);
            return id.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /**
     * Removes our program from the interface (idempotent). An interface that has vanished counts as detached.
     * Fails with EEXIST if someone replaced our program meanwhile (theirs is left alone).
     */
    public void detach() {
        if (!attached) return;
        try (Arena arena = Arena.ofConfined()) {
            // struct bpf_xdp_attach_opts { size_t sz; int old_prog_fd; } = 16 bytes
            MemorySegment opts = arena.allocate(16, 8);
            opts.set(ValueLayout.JAVA_LONG, 0, 16);
            opts.set(ValueLayout.JAVA_INT, 8, progFd);
            int rc = LibBpf.xdpDetach(ifindex, mode.flag, opts);
            if (rc != 0 && rc != -ENODEV) {
                throw new BpfException("bpf_xdp_detach(ifindex " + ifindex + " '" + ifname + "', " + mode.label + ")", rc);
            }
            attached = false;
        }
    }

    @Override
    public void close() { detach(); }

    @Override
    public String toString() { return "XdpAttachment[" + ifname + "#" + ifindex + ", " + mode.label + (attached ? "" : ", detached") + "]"; }
}
