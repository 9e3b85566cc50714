package io.xaforward.dataplane;

import io.xaforward.dataplane.sys.Syscalls;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

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
 *       already in the dispatcher and says how to remove it, unless that program uses the very maps it attaches
 *       with: a pinned gateway ({@code --pin}) restarting, which takes over from its predecessor (see
 *       {@link #attach}).</li>
 *   <li>Attach and detach each build a new dispatcher and swap it in atomically: other programs keep running, and
 *       a detach leaves them in place.</li>
 * </ul>
 */
public final class DispatcherAttachment {
    private final String ifname;
    private final int ifindex;
    private final Program program;
    private final List<Integer> predecessors;
    private boolean attached = true;

    private DispatcherAttachment(String ifname, int ifindex, Program program, List<Integer> predecessors) {
        this.ifname = ifname;
        this.ifindex = ifindex;
        this.program = program;
        this.predecessors = List.copyOf(predecessors);
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
     * <p>A gateway program already in the dispatcher that uses the map with kernel id {@code routesMapId} is this
     * gateway's predecessor: the same pinned maps, left running by a gateway process that stopped or was killed.
     * It stays in the dispatcher until the new program has joined and is detached after that, so each frame meets
     * one of the two (libxdp swaps in a rebuilt dispatcher atomically, twice) and a restart loses nothing. That order,
     * rather than keeping the predecessor and loading nothing, is what makes a restart run the new gateway's program,
     * as a restart in bpf_link mode does. While both run, the predecessor comes first (libxdp orders equal priorities
     * by load time) and ends the chain for every frame it forwards or drops; a frame it passes meets the new program
     * too, which passes it as well, since both read the same maps.
     *
     * @throws BpfException          when libxdp or the kernel refuses; the message carries libxdp's own explanation
     * @throws IllegalStateException when the interface runs a lone XDP program (not through a dispatcher) or its
     *                               dispatcher already runs an XAForward gateway that is not this one's predecessor
     */
    static DispatcherAttachment attach(Program program, String ifname, int routesMapId) {
        int ifindex = LibBpf.ifNameToIndex(ifname);
        XdpDispatcher.Component lone = XdpDispatcher.loneProgram(ifindex);
        if (lone != null) {
            throw new IllegalStateException(ifname + " runs XDP program id " + lone.id() + " ('" + lone.name() + "') alone,"
                    + " not through libxdp's dispatcher, so nothing can be added beside it: reload that program with"
                    + " xdp-loader (or a tool built on libxdp, such as xdp-filter), or detach it ('ip link set dev "
                    + ifname + " xdp off')");
        }
        List<Integer> predecessors = new ArrayList<>();
        for (XdpDispatcher.Component c : XdpDispatcher.components(ifindex)) {
            if (!c.name().equals(XafDataplane.PROGRAM)) continue;
            if (usesMap(c.id(), routesMapId)) {
                predecessors.add(c.id());
                continue;
            }
            throw new IllegalStateException(ifname + "'s XDP dispatcher already runs an XAForward gateway (program id "
                    + c.id() + "): another 'xaf gateway' uses this interface, or one was killed (libxdp keeps a program"
                    + " attached after its process ends); remove it with 'xdp-loader unload " + ifname + " -i " + c.id() + "'"
                    + " (a gateway started with --pin takes over from its own earlier process by itself)");
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
        DispatcherAttachment a = new DispatcherAttachment(ifname, ifindex, program, predecessors);
        // libxdp falls back to a lone program when it cannot build a dispatcher; the probe should have caught every
        // such kernel, but a gateway that owns the interface is exactly what this mode must not leave behind.
        if (XdpDispatcher.loneProgram(ifindex) != null) {
            a.detach();
            throw new BpfException(op + ": libxdp attached the gateway alone, without a dispatcher (it could not build"
                    + " one here), so it was detached again", 95 /* EOPNOTSUPP */, log);
        }
        for (int id : predecessors) detachById(ifname, ifindex, id);
        return a;
    }

    /** Whether the program with kernel id {@code programId} uses the map with id {@code mapId}; false when it is gone. */
    static boolean usesMap(int programId, int mapId) {
        int fd;
        try {
            fd = KernelObjects.programFdById(programId);
        } catch (BpfException e) {
            return false; // unloaded meanwhile
        }
        try {
            return KernelObjects.program(fd).mapIds().contains(mapId);
        } finally {
            LibBpf.closeFd(fd);
        }
    }

    /**
     * Removes the program with kernel id {@code programId} from the dispatcher on {@code ifname}; the other
     * programs stay. A program or dispatcher already gone counts as removed.
     */
    static void detachById(String ifname, int ifindex, int programId) {
        LibXdp x = LibXdp.get();
        MemorySegment p = x.fromId(programId);
        if (x.error(p) != 0) return; // unloaded meanwhile
        LibBpf.startCapture();
        int rc;
        String log;
        try {
            rc = x.detach(p, ifindex, LibXdp.XDP_MODE_NATIVE);
        } finally {
            log = LibBpf.stopCapture();
            x.close(p);
        }
        if (rc != 0 && rc != -2 /* ENOENT */ && rc != -19 /* ENODEV */) {
            throw new BpfException("xdp_program__detach(program id " + programId + ", ifindex " + ifindex + " '" + ifname
                    + "', through libxdp's dispatcher)", rc, log);
        }
    }

    /**
     * The XAForward gateway programs that use the map with kernel id {@code routesMapId}, removed from the
     * dispatcher of every interface of this network namespace (what {@code xaf gateway unpin} does for a gateway
     * pinned in dispatcher mode, whose programs libxdp keeps attached). Returns "IFNAME (program id N)" for each.
     */
    public static List<String> detachUsersOf(int routesMapId) {
        List<String> removed = new ArrayList<>();
        for (Map.Entry<Integer, String> iface : Syscalls.interfaces().entrySet()) {
            int ifindex = iface.getKey();
            String ifname = iface.getValue();
            for (XdpDispatcher.Component c : XdpDispatcher.components(ifindex)) {
                if (c.name().equals(XafDataplane.PROGRAM) && usesMap(c.id(), routesMapId)) {
                    detachById(ifname, ifindex, c.id());
                    removed.add(ifname + " (program id " + c.id() + ")");
                }
            }
        }
        return removed;
    }

    public String ifname() { return ifname; }
    public int ifindex() { return ifindex; }
    public boolean isAttached() { return attached; }

    /** The ids of the programs this attach took over from and removed (a pinned gateway's earlier process); usually none. */
    public List<Integer> predecessors() { return predecessors; }

    /** The gateway program's own kernel id (an extension program), not the dispatcher's. */
    public int programId() { return program.id(); }

    /**
     * Forgets this attachment without detaching: libxdp's pins keep the program in the dispatcher (a gateway
     * started with {@code --pin} stopping, for its successor to take over).
     */
    public void release() {
        attached = false;
    }

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
