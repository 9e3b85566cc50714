package io.xaforward.dataplane;

import java.lang.foreign.MemorySegment;

/**
 * The gateway program attached to one interface through libxdp's multiprog dispatcher ({@code attach: dispatcher}),
 * beside whatever other programs the dispatcher runs there (a firewall such as xdp-filter, a load balancer).
 *
 * <p>What differs from an {@link XdpAttachment} (a BPF link of our own):
 * <ul>
 *   <li>The kernel runs the gateway as an extension (freplace) of a dispatcher slot: the program id the interface
 *       shows ({@code ip link}, bpf_xdp_query) is the dispatcher's; the gateway's own id is {@link #programId()}, and
 *       {@code xdp-loader status} lists it under the interface with its priority and chain-call actions.</li>
 *   <li>The maps are the gateway's own (the program is loaded from its object reusing the dataplane's maps), so
 *       routes, ports, counters and the devmap redirect work as with a link; the redirect leaves from inside the
 *       extension, which the kernel treats as the dispatcher's own return value.</li>
 *   <li>libxdp keeps each program's link pinned under /sys/fs/bpf/xdp/: the program stays attached when the process
 *       dies (kill -9), unlike a link of our own. A gateway therefore refuses to start beside a gateway program
 *       already in the dispatcher and says how to remove it.</li>
 *   <li>Attach and detach each build a new dispatcher and swap it in atomically: other programs keep running, and
 *       a detach leaves them in place.</li>
 * </ul>
 */
public final class DispatcherAttachment {
    private final String ifname;
    private final int ifindex;
    private final Program program;
    private boolean attached = true;

    private DispatcherAttachment(String ifname, int ifindex, Program program) {
        this.ifname = ifname;
        this.ifindex = ifindex;
        this.program = program;
    }

    /**
     * The gateway program as libxdp holds it: its BPF object (opened, maps reused, loaded by libxdp at the first
     * attach as an extension) and the {@code struct xdp_program *}. One per dataplane, attached to every interface.
     */
    static final class Program implements AutoCloseable {
        private final BpfObject object;
        private MemorySegment xdpProgram;

        Program(BpfObject unloaded) {
            LibXdp x = LibXdp.get();
            MemorySegment p = x.fromBpfObject(unloaded.nativeHandle());
            int err = x.error(p);
            if (err != 0) throw new BpfException("xdp_program__from_bpf_obj(" + unloaded.origin() + ")", err);
            this.object = unloaded;
            this.xdpProgram = p;
        }

        BpfObject object() { return object; }

        MemorySegment pointer() {
            if (xdpProgram == null) throw new IllegalStateException("the dispatcher program of " + object.origin() + " is closed");
            return xdpProgram;
        }

        /** The extension program's kernel id; 0 before the first attach loaded it. */
        int id() { return LibXdp.get().id(pointer()); }

        /** Closes libxdp's handle, then the object (libxdp does not own an object it was given). */
        @Override
        public void close() {
            if (xdpProgram != null) {
                LibXdp.get().close(xdpProgram);
                xdpProgram = null;
            }
            object.close();
        }
    }

    /**
     * Adds {@code program} to the dispatcher on {@code ifname} (native mode), creating the dispatcher when the
     * interface has no program yet.
     *
     * @throws BpfException          when libxdp or the kernel refuses; the message carries libxdp's own explanation
     * @throws IllegalStateException when the interface runs a lone XDP program (not through a dispatcher) or its
     *                               dispatcher already runs an XAForward gateway
     */
    static DispatcherAttachment attach(Program program, String ifname) {
        int ifindex = LibBpf.ifNameToIndex(ifname);
        XdpDispatcher.Component lone = XdpDispatcher.loneProgram(ifindex);
        if (lone != null) {
            throw new IllegalStateException(ifname + " runs XDP program id " + lone.id() + " ('" + lone.name() + "') alone,"
                    + " not through libxdp's dispatcher, so nothing can be added beside it: reload that program with"
                    + " xdp-loader (or a tool built on libxdp, such as xdp-filter), or detach it ('ip link set dev "
                    + ifname + " xdp off')");
        }
        for (XdpDispatcher.Component c : XdpDispatcher.components(ifindex)) {
            if (c.name().equals(XafDataplane.PROGRAM)) {
                throw new IllegalStateException(ifname + "'s XDP dispatcher already runs an XAForward gateway (program id "
                        + c.id() + "): another 'xaf gateway' uses this interface, or one was killed (libxdp keeps a program"
                        + " attached after its process ends); remove it with 'xdp-loader unload " + ifname + " -i " + c.id() + "'");
            }
        }
        LibXdp x = LibXdp.get();
        if (program.id() == 0) {
            // Loaded at this first attach: with fragment support only where the dispatcher it joins has it (libxdp
            // reads the section's frags flag only after loading, and would build a dispatcher the kernel then
            // refuses to attach the gateway to).
            int rc = x.setFragsSupport(program.pointer(), XdpDispatcher.fragsSupport(ifindex));
            if (rc != 0) throw new BpfException("xdp_program__set_xdp_frags_support(" + XafDataplane.PROGRAM + ")", rc);
        }
        LibBpf.startCapture();
        int rc;
        String log;
        try {
            rc = x.attach(program.pointer(), ifindex, LibXdp.XDP_MODE_NATIVE);
        } finally {
            log = LibBpf.stopCapture();
        }
        String op = "xdp_program__attach(ifindex " + ifindex + " '" + ifname + "', native, through libxdp's dispatcher)";
        if (rc != 0) throw new BpfException(op, rc, log);
        DispatcherAttachment a = new DispatcherAttachment(ifname, ifindex, program);
        // libxdp falls back to a lone program when it cannot build a dispatcher; the probe should have caught every
        // such kernel, but a gateway that owns the interface is exactly what this mode must not leave behind.
        if (XdpDispatcher.loneProgram(ifindex) != null) {
            a.detach();
            throw new BpfException(op + ": libxdp attached the gateway alone, without a dispatcher (it could not build"
                    + " one here), so it was detached again", 95 /* EOPNOTSUPP */, log);
        }
        return a;
    }

    public String ifname() { return ifname; }
    public int ifindex() { return ifindex; }
    public boolean isAttached() { return attached; }

    /** The gateway program's own kernel id (an extension program), not the dispatcher's. */
    public int programId() { return program.id(); }

    /**
     * Removes the gateway from the interface's dispatcher (idempotent); the other programs stay. An interface that
     * has vanished, or a dispatcher that no longer holds the program, counts as detached.
     */
    public void detach() {
        if (!attached) return;
        attached = false;
        LibBpf.startCapture();
        int rc;
        String log;
        try {
            rc = LibXdp.get().detach(program.pointer(), ifindex, LibXdp.XDP_MODE_NATIVE);
        } finally {
            log = LibBpf.stopCapture();
        }
        if (rc != 0 && rc != -2 /* ENOENT */ && rc != -19 /* ENODEV */) {
            throw new BpfException("xdp_program__detach(ifindex " + ifindex + " '" + ifname + "', through libxdp's dispatcher)", rc, log);
        }
    }

    @Override
    public String toString() {
        return "DispatcherAttachment[" + ifname + "#" + ifindex + (attached ? "" : ", detached") + "]";
    }
}
