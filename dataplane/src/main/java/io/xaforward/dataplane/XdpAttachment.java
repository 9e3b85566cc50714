package io.xaforward.dataplane;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One XDP program attached to one interface through a BPF link (bpf_link_create with BPF_XDP). The link lives as long
 * as a file descriptor or a bpffs pin refers to it: when the process that made it dies (kill -9, an OOM kill) the
 * kernel closes its fds and the program is detached, so a dead gateway never leaves a program forwarding without a
 * control plane. Pinning ({@link #pin}) keeps it attached on purpose.
 *
 * <p>Native (driver) mode is the default because that is where XDP is fast; generic (SKB) mode is used only when the
 * caller explicitly allows the fallback, and the fallback is logged. A link never replaces what another program or
 * link attached: the kernel refuses with EBUSY/EEXIST, and the error says who holds the interface.
 */
public final class XdpAttachment implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(XdpAttachment.class.getName());

    static final int XDP_FLAGS_SKB_MODE = 2, XDP_FLAGS_DRV_MODE = 4;
    /** enum bpf_attach_type: BPF_XDP. */
    static final int BPF_XDP = 37;
    private static final int ENODEV = 19, EBUSY = 16, EEXIST = 17, ENOENT = 2;

    /** How the program runs on the interface. */
    public enum Mode {
        NATIVE(XDP_FLAGS_DRV_MODE, "native"), GENERIC(XDP_FLAGS_SKB_MODE, "generic");

        final int flag;
        final String label;

        Mode(int flag, String label) { this.flag = flag; this.label = label; }

        public String label() { return label; }
    }

    private final String ifname;
    private final int ifindex;
    private final Mode mode;
    private int linkFd;
    private final int linkId;

    private XdpAttachment(String ifname, int ifindex, Mode mode, int linkFd) {
        this.ifname = ifname;
        this.ifindex = ifindex;
        this.mode = mode;
        this.linkFd = linkFd;
        this.linkId = KernelObjects.link(linkFd).id();
    }

    /**
     * Attaches {@code progFd} to {@code ifname} in native mode; if that fails and {@code allowGenericFallback} is true,
     * tries generic mode and logs a warning.
     *
     * @throws BpfException when the interface is missing or the kernel refuses; when another program or link holds
     *                      the interface the message names it and says how to free the interface
     */
    public static XdpAttachment attach(int progFd, String ifname, boolean allowGenericFallback) {
        int ifindex = LibBpf.ifNameToIndex(ifname);
        int fd = linkCreate(progFd, ifindex, Mode.NATIVE);
        if (fd >= 0) {
            return new XdpAttachment(ifname, ifindex, Mode.NATIVE, fd);
        }
        BpfException nativeFailure = failure(ifindex, ifname, Mode.NATIVE, fd);
        if (!allowGenericFallback || isHeldByAnother(fd)) {
            throw nativeFailure;
        }
        LOG.log(System.Logger.Level.WARNING, "native XDP failed on " + ifname + " (" + nativeFailure.getMessage()
                + "); falling back to generic (SKB) mode as the caller allowed: expect much lower performance");
        fd = linkCreate(progFd, ifindex, Mode.GENERIC);
        if (fd < 0) {
            BpfException e = failure(ifindex, ifname, Mode.GENERIC, fd);
            e.addSuppressed(nativeFailure);
            throw e;
        }
        return new XdpAttachment(ifname, ifindex, Mode.GENERIC, fd);
    }

    /**
     * Takes over the XDP link pinned at {@code pinPath} (left attached on purpose by a gateway started with pinning).
     *
     * @throws BpfException ENOENT when nothing is pinned there
     */
    public static XdpAttachment adopt(String ifname, String pinPath) {
        int ifindex = LibBpf.ifNameToIndex(ifname);
        int fd;
        try (Arena arena = Arena.ofConfined()) {
            fd = LibBpf.objGet(arena.allocateFrom(pinPath));
        }
        if (fd < 0) throw new BpfException("bpf_obj_get('" + pinPath + "')", fd);
        KernelObjects.LinkInfo info = KernelObjects.link(fd);
        if (!info.isXdp() || info.xdpIfindex() != ifindex) {
            LibBpf.closeFd(fd);
            throw new IllegalStateException(pinPath + " is not an XDP link on " + ifname + " (ifindex " + ifindex
                    + "): link " + info + "; remove the stale pin (xaf gateway unpin)");
        }
        Mode mode = attachedProgramId(ifindex, Mode.NATIVE) == info.programId() ? Mode.NATIVE : Mode.GENERIC;
        return new XdpAttachment(ifname, ifindex, mode, fd);
    }

    private static int linkCreate(int progFd, int ifindex, Mode mode) {
        try (Arena arena = Arena.ofConfined()) {
            // struct bpf_link_create_opts (libbpf 1.1): size_t sz; __u32 flags; ... = 64 bytes, the rest zero
            MemorySegment opts = arena.allocate(64, 8);
            opts.set(ValueLayout.JAVA_LONG, 0, 64);
            opts.set(ValueLayout.JAVA_INT, 8, mode.flag);
            return LibBpf.linkCreate(progFd, ifindex, BPF_XDP, opts);
        }
    }

    private static boolean isHeldByAnother(int rc) {
        return rc == -EBUSY || rc == -EEXIST;
    }

    private static BpfException failure(int ifindex, String ifname, Mode mode, int rc) {
        String op = "bpf_link_create(BPF_XDP, ifindex " + ifindex + " '" + ifname + "', " + mode.label + ")";
        if (!isHeldByAnother(rc)) return new BpfException(op, rc);
        return new BpfException(op + ": " + holder(ifindex, ifname), rc);
    }

    /** Who holds the interface: an XDP link (another gateway, or a pin) or a program attached without a link. */
    static String holder(int ifindex, String ifname) {
        for (Mode m : Mode.values()) {
            int progId;
            try {
                progId = attachedProgramId(ifindex, m);
            } catch (BpfException e) {
                continue;
            }
            if (progId == 0) continue;
            String prog = "program id " + progId + programName(progId);
            for (KernelObjects.LinkInfo l : KernelObjects.xdpLinks()) {
                if (l.xdpIfindex() == ifindex && l.programId() == progId) {
                    return ifname + " already runs " + prog + " (" + m.label + ") through XDP link id " + l.id()
                            + ": another 'xaf gateway' (or another XDP loader) is using this interface, or a gateway"
                            + " left it pinned on purpose ('xaf gateway unpin --config FILE' removes that)";
                }
            }
            return ifname + " already has " + prog + " (" + m.label + ") attached without a link (by 'ip link set"
                    + " dev " + ifname + " xdp ...', xdp-loader, or a gateway of an older version that was killed):"
                    + " it forwards with no control plane; check it with 'ip -d link show dev " + ifname
                    + "' and remove it with 'ip link set dev " + ifname + " xdp" + (m == Mode.GENERIC ? "generic" : "")
                    + " off'";
        }
        return ifname + " is held by another XDP program";
    }

    private static String programName(int progId) {
        int fd = LibBpf.progFdById(progId);
        if (fd < 0) return "";
        try {
            return " ('" + KernelObjects.program(fd).name() + "')";
        } catch (BpfException e) {
            return "";
        } finally {
            LibBpf.closeFd(fd);
        }
    }

    public String ifname() { return ifname; }
    public int ifindex() { return ifindex; }
    public Mode mode() { return mode; }
    public boolean isAttached() { return linkFd >= 0; }
    /** The kernel's id of the XDP link (what bpftool link shows). */
    public int linkId() { return linkId; }

    /** The id of the program the link runs now. */
    public int programId() {
        requireOpen();
        return KernelObjects.link(linkFd).programId();
    }

    private void requireOpen() {
        if (linkFd < 0) throw new IllegalStateException("the XDP link on " + ifname + " is closed");
    }

    /** The id of the program attached to {@code ifindex} in {@code mode}, 0 when none. */
    public static int attachedProgramId(int ifindex, Mode mode) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment id = arena.allocate(ValueLayout.JAVA_INT);
            int rc = LibBpf.xdpQueryId(ifindex, mode.flag, id);
            if (rc != 0) throw new BpfException("bpf_xdp_query_id(ifindex " + ifindex + ")", rc);
            return id.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /** Pins the link at {@code path} on a bpffs: it then stays attached after this process ends. */
    public void pin(String path) {
        requireOpen();
        try (Arena arena = Arena.ofConfined()) {
            int rc = LibBpf.objPin(linkFd, arena.allocateFrom(path));
            if (rc != 0) throw new BpfException("bpf_obj_pin(XDP link on " + ifname + ", '" + path + "')", rc);
        }
    }

    /** Makes the link run {@code progFd} instead, atomically: no frame meets an interface without a program. */
    public void replaceProgram(int progFd) {
        requireOpen();
        int rc = LibBpf.linkUpdate(linkFd, progFd, MemorySegment.NULL);
        if (rc != 0) throw new BpfException("bpf_link_update(XDP link " + linkId + " on " + ifname + ")", rc);
    }

    /**
     * Removes our program from the interface (idempotent), pinned or not. An interface that has vanished counts as
     * detached.
     */
    public void detach() {
        if (linkFd < 0) return;
        try {
            int rc = LibBpf.linkDetach(linkFd);
            if (rc != 0 && rc != -ENODEV && rc != -ENOENT && rc != -22 /* EINVAL: already detached */) {
                throw new BpfException("bpf_link_detach(XDP link " + linkId + " on " + ifname + ", " + mode.label + ")", rc);
            }
        } finally {
            release();
        }
    }

    /** Closes our fd to the link without detaching it: a pin (if any) keeps the program attached. */
    public void release() {
        if (linkFd < 0) return;
        LibBpf.closeFd(linkFd);
        linkFd = -1;
    }

    @Override
    public void close() { detach(); }

    @Override
    public String toString() {
        return "XdpAttachment[" + ifname + "#" + ifindex + ", " + mode.label + ", link " + linkId + (isAttached() ? "" : ", closed") + "]";
    }
}
