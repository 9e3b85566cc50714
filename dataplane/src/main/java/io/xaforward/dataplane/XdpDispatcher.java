package io.xaforward.dataplane;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What the gateway needs to know about libxdp's multiprog dispatcher (xdp-tools), through which several XDP programs
 * share one interface: {@code attach: dispatcher}. libxdp attaches one small dispatcher program to the interface and
 * runs each program in turn as a BPF extension (freplace) of one of its slots, in the order of the programs' run
 * priorities; a program's result ends the chain unless its chain-call actions include it (section
 * {@code .xdp_run_config} of its object, read by libxdp).
 *
 * <p>Everything here reads; {@link DispatcherAttachment} attaches. The kernel must accept extension programs:
 * {@link #probeExtensions} asks it before anything is attached, because libxdp, when it cannot build a dispatcher,
 * silently attaches a lone program that owns the interface, the opposite of what the mode is for.
 */
public final class XdpDispatcher {
    /** The name of libxdp's dispatcher program, as the kernel (and {@code ip link}) shows it. */
    public static final String DISPATCHER_PROGRAM = "xdp_dispatcher";
    static final String PROBE_RESOURCE = "bpf/xaf_ext_probe.bpf.o";
    private static final int ENOENT = 2;

    private XdpDispatcher() {}

    /**
     * One program run by a dispatcher (or, for {@link #runConfig}, as libxdp would run it): kernel id (0 when not
     * loaded), name, run priority (lower runs first) and whether the next program runs after it returns XDP_PASS.
     */
    public record Component(int id, String name, int priority, boolean chainCallOnPass) {}

    /** What the kernel answered to loading an extension program: errno 0 when it loads them. */
    public record ExtensionSupport(int errno, String log) {
        public boolean supported() { return errno == 0; }
    }

    /**
     * Loads a tiny XDP program and an extension (freplace) program that replaces one of its functions, as libxdp's
     * dispatcher does with every program it runs; attaches nothing and keeps nothing loaded.
     */
    public static ExtensionSupport probeExtensions() {
        try (BpfObject target = BpfObject.openResource(PROBE_RESOURCE)) {
            check(LibBpf.setAutoload(target.nativeProgram("xaf_probe_ext"), false), "bpf_program__set_autoload(xaf_probe_ext)");
            target.load();
            int targetFd = target.programFd("xaf_probe_target");
            try (BpfObject ext = BpfObject.openResource(PROBE_RESOURCE); Arena arena = Arena.ofConfined()) {
                check(LibBpf.setAutoload(ext.nativeProgram("xaf_probe_target"), false), "bpf_program__set_autoload(xaf_probe_target)");
                check(LibBpf.setAttachTarget(ext.nativeProgram("xaf_probe_ext"), targetFd, arena.allocateFrom("xaf_probe_slot")),
                        "bpf_program__set_attach_target(xaf_probe_ext, xaf_probe_slot)");
                // libbpf's own lines stay out of the log (its hint for EPERM, 'try raising ulimit -l', misleads here)
                LibBpf.startQuietCapture();
                try {
                    ext.load();
                    return new ExtensionSupport(0, "");
                } catch (BpfException e) {
                    return new ExtensionSupport(e.errno(), e.verifierLog());
                } finally {
                    LibBpf.stopCapture();
                }
            }
        }
    }

    private static void check(int rc, String op) {
        if (rc != 0) throw new BpfException(op, rc);
    }

    /**
     * @throws BpfException when this kernel refuses extension programs, saying what that means for
     *                      {@code attach: dispatcher} and what to use instead
     */
    public static void requireExtensions() {
        ExtensionSupport s = probeExtensions();
        if (s.supported()) return;
        throw new BpfException("this kernel refuses BPF extension (freplace) programs, which libxdp's multiprog"
                + " dispatcher needs to run the gateway beside other XDP programs (a test extension program failed to"
                + " load; kernels before 5.10, kernels without BPF trampolines and some restricted or virtualised"
                + " kernels refuse them; xdp-loader then loads programs alone, without a dispatcher). 'attach: dispatcher'"
                + " cannot work on this host: use 'attach: native' (the gateway then owns the interface), or a kernel"
                + " that runs extension programs", s.errno());
    }

    /**
     * The programs the dispatcher on {@code ifindex} runs, in run order; empty when the interface has no XDP program
     * or a lone program without a dispatcher ({@link #loneProgram}).
     */
    public static List<Component> components(int ifindex) {
        LibXdp x = LibXdp.get();
        MemorySegment mp = x.multiprog(ifindex);
        int err = x.error(mp);
        if (err == -ENOENT) return List.of();
        if (err != 0) throw new BpfException("xdp_multiprog__get_from_ifindex(ifindex " + ifindex + ")", err);
        try {
            List<Component> out = new ArrayList<>();
            if (x.isLegacy(mp)) return out;
            MemorySegment p = MemorySegment.NULL;
            while (true) {
                p = x.next(p, mp);
                if (p.equals(MemorySegment.NULL) || x.error(p) != 0) return out;
                out.add(component(x, p));
            }
        } finally {
            x.closeMultiprog(mp);
        }
    }

    /**
     * Whether a program joining {@code ifindex} must be loaded with fragment support (xdp.frags) to be accepted:
     * the kernel attaches an extension only to a dispatcher with the same fragment support, and libxdp builds a
     * dispatcher with it only when every program in it has it (xdp-filter's do not). True where no dispatcher runs
     * yet, so the gateway keeps its jumbo frames as with {@code attach: native}.
     */
    public static boolean fragsSupport(int ifindex) {
        LibXdp x = LibXdp.get();
        MemorySegment mp = x.multiprog(ifindex);
        int err = x.error(mp);
        if (err == -ENOENT) return true;
        if (err != 0) throw new BpfException("xdp_multiprog__get_from_ifindex(ifindex " + ifindex + ")", err);
        try {
            return x.fragsSupport(mp);
        } finally {
            x.closeMultiprog(mp);
        }
    }

    /** The program attached to {@code ifindex} without a dispatcher, or null (none, or a dispatcher). */
    public static Component loneProgram(int ifindex) {
        LibXdp x = LibXdp.get();
        MemorySegment mp = x.multiprog(ifindex);
        int err = x.error(mp);
        if (err == -ENOENT) return null;
        if (err != 0) throw new BpfException("xdp_multiprog__get_from_ifindex(ifindex " + ifindex + ")", err);
        try {
            if (!x.isLegacy(mp)) return null;
            MemorySegment main = x.mainProgram(mp);
            return main.equals(MemorySegment.NULL) ? null : component(x, main);
        } finally {
            x.closeMultiprog(mp);
        }
    }

    /**
     * The XAForward gateway behind {@code attachedProgramId}, the program the interface {@code ifindex} shows: when
     * that is libxdp's dispatcher, the id of the gateway program it runs (0 when it runs none); otherwise
     * {@code attachedProgramId} itself. Without libxdp on the host a dispatcher cannot be looked into, and its id is
     * returned as it is (callers then see a program that is not a gateway).
     */
    public static int gatewayBehind(int ifindex, int attachedProgramId) {
        if (attachedProgramId == 0 || !DISPATCHER_PROGRAM.equals(programName(attachedProgramId))) return attachedProgramId;
        try {
            for (Component c : components(ifindex)) {
                if (c.name().equals(XafDataplane.PROGRAM)) return c.id();
            }
            return 0;
        } catch (IllegalStateException e) {
            return attachedProgramId;
        }
    }

    private static String programName(int id) {
        int fd = LibBpf.progFdById(id);
        if (fd < 0) return "";
        try {
            return KernelObjects.program(fd).name();
        } catch (BpfException e) {
            return "";
        } finally {
            LibBpf.closeFd(fd);
        }
    }

    private static Component component(LibXdp x, MemorySegment p) {
        return new Component(x.id(p), x.name(p), x.runPriority(p), x.chainCallEnabled(p, LibXdp.XDP_PASS));
    }

    /**
     * How libxdp would run the first program of {@code objectFile}: its run priority and chain-call on XDP_PASS, from
     * its {@code .xdp_run_config} section (libxdp's defaults, 50 and true, without one). Loads nothing.
     */
    public static Component runConfig(Path objectFile) {
        LibXdp x = LibXdp.get();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = x.openFile(arena.allocateFrom(objectFile.toString()));
            int err = x.error(p);
            if (err != 0) throw new BpfException("xdp_program__open_file('" + objectFile + "')", err);
            try {
                return component(x, p);
            } finally {
                x.close(p);
            }
        }
    }
}
