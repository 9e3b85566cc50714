package io.xaforward.dataplane;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.NoSuchElementException;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The part of xdp-tools' libxdp.so.1 that attaches the gateway through libxdp's multiprog dispatcher, bound through
 * java.lang.foreign like {@link LibBpf}. Only {@code attach: dispatcher} needs it, so it is bound on first use and a
 * host without libxdp gets an error naming the package, not a failed class initialisation.
 *
 * <p>Conventions of libxdp 1.3: int-returning calls give {@code -errno}; pointer-returning calls give NULL or an
 * error encoded in the pointer, which {@code libxdp_get_error} turns into {@code -errno} (see {@link #error}).
 * libxdp prints through the same callback as libbpf, so its warnings (why an attach was refused) reach the
 * {@code io.xaforward.dataplane.libbpf} logger and a {@link BpfException}'s log.
 */
public final class LibXdp {
    /** The shared library libxdp1 (Debian, Ubuntu; xdp-tools elsewhere) installs. */
    public static final String LIBRARY = "libxdp.so.1";
    /** enum xdp_attach_mode. */
    static final int XDP_MODE_NATIVE = 1;
    /** enum xdp_action: XDP_PASS. */
    static final int XDP_PASS = 2;

    private static final Linker LINKER = Linker.nativeLinker();
    private static volatile LibXdp instance;

    final MethodHandle fromBpfObj, openFile, programClose, attach, detach, programId, programName, runPrio, chainCall,
            multiprogGet, multiprogNext, multiprogIsLegacy, multiprogMain, multiprogClose, getError,
            setFrags, multiprogFrags, fromId;

    private LibXdp(SymbolLookup lib) {
        fromBpfObj = LINKER.downcallHandle(lib.findOrThrow("xdp_program__from_bpf_obj"), FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        openFile = LINKER.downcallHandle(lib.findOrThrow("xdp_program__open_file"), FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, ADDRESS));
        programClose = LINKER.downcallHandle(lib.findOrThrow("xdp_program__close"), FunctionDescriptor.ofVoid(ADDRESS));
        attach = LINKER.downcallHandle(lib.findOrThrow("xdp_program__attach"), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT));
        detach = LINKER.downcallHandle(lib.findOrThrow("xdp_program__detach"), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT));
        programId = LINKER.downcallHandle(lib.findOrThrow("xdp_program__id"), FunctionDescriptor.of(JAVA_INT, ADDRESS));
        programName = LINKER.downcallHandle(lib.findOrThrow("xdp_program__name"), FunctionDescriptor.of(ADDRESS, ADDRESS));
        runPrio = LINKER.downcallHandle(lib.findOrThrow("xdp_program__run_prio"), FunctionDescriptor.of(JAVA_INT, ADDRESS));
        chainCall = LINKER.downcallHandle(lib.findOrThrow("xdp_program__chain_call_enabled"), FunctionDescriptor.of(JAVA_BOOLEAN, ADDRESS, JAVA_INT));
        multiprogGet = LINKER.downcallHandle(lib.findOrThrow("xdp_multiprog__get_from_ifindex"), FunctionDescriptor.of(ADDRESS, JAVA_INT));
        multiprogNext = LINKER.downcallHandle(lib.findOrThrow("xdp_multiprog__next_prog"), FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        multiprogIsLegacy = LINKER.downcallHandle(lib.findOrThrow("xdp_multiprog__is_legacy"), FunctionDescriptor.of(JAVA_BOOLEAN, ADDRESS));
        multiprogMain = LINKER.downcallHandle(lib.findOrThrow("xdp_multiprog__main_prog"), FunctionDescriptor.of(ADDRESS, ADDRESS));
        multiprogClose = LINKER.downcallHandle(lib.findOrThrow("xdp_multiprog__close"), FunctionDescriptor.ofVoid(ADDRESS));
        setFrags = LINKER.downcallHandle(lib.findOrThrow("xdp_program__set_xdp_frags_support"), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BOOLEAN));
        multiprogFrags = LINKER.downcallHandle(lib.findOrThrow("xdp_multiprog__xdp_frags_support"), FunctionDescriptor.of(JAVA_BOOLEAN, ADDRESS));
        fromId = LINKER.downcallHandle(lib.findOrThrow("xdp_program__from_id"), FunctionDescriptor.of(ADDRESS, JAVA_INT));
        getError = LINKER.downcallHandle(lib.findOrThrow("libxdp_get_error"), FunctionDescriptor.of(JAVA_LONG, ADDRESS));
        MethodHandle setPrint = LINKER.downcallHandle(lib.findOrThrow("libxdp_set_print"), FunctionDescriptor.of(ADDRESS, ADDRESS));
        try {
            MethodHandle target = MethodHandles.lookup().findStatic(LibBpf.class, "onPrint",
                    MethodType.methodType(int.class, int.class, MemorySegment.class, MemorySegment.class));
            MemorySegment stub = LINKER.upcallStub(target, FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS), Arena.global());
            MemorySegment ignored = (MemorySegment) setPrint.invokeExact(stub);
        } catch (Throwable t) {
            throw new IllegalStateException("libxdp_set_print", t);
        }
    }

    /**
     * libxdp, bound once.
     *
     * @throws IllegalStateException naming the package to install when the library cannot be loaded
     */
    public static LibXdp get() {
        LibXdp l = instance;
        if (l != null) return l;
        synchronized (LibXdp.class) {
            if (instance == null) instance = load(LIBRARY);
            return instance;
        }
    }

    /** Binds the library {@code library} (a name the dynamic linker resolves, or a path). */
    static LibXdp load(String library) {
        SymbolLookup lookup;
        try {
            lookup = SymbolLookup.libraryLookup(library, Arena.global());
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(library + " (libxdp, from xdp-tools) cannot be loaded: " + e.getMessage()
                    + ". 'attach: dispatcher' shares the interface through libxdp's multiprog dispatcher and needs it:"
                    + " install it (Debian/Ubuntu: apt-get install libxdp1 xdp-tools; Fedora: dnf install libxdp"
                    + " xdp-tools), or use 'attach: native', which needs only libbpf", e);
        } catch (NoSuchElementException e) {
            throw new IllegalStateException(library + " lacks a libxdp call the gateway uses (" + e.getMessage()
                    + "): 'attach: dispatcher' needs libxdp 1.3 or newer", e);
        }
        try {
            return new LibXdp(lookup);
        } catch (NoSuchElementException e) {
            throw new IllegalStateException(library + " lacks a libxdp call the gateway uses (" + e.getMessage()
                    + "): 'attach: dispatcher' needs libxdp 1.3 or newer", e);
        }
    }

    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException(t);
    }

    /**
     * 0 when {@code pointer} is a valid libxdp object, else a negative errno: the one an error pointer encodes, or
     * for NULL the errno libxdp left (-ENOENT when that was lost: errno does not reliably survive between downcalls).
     */
    int error(MemorySegment pointer) {
        try {
            int rc = (int) (long) getError.invokeExact(pointer);
            return rc == 0 && pointer.equals(MemorySegment.NULL) ? -2 : rc;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The name libxdp reports for a program (its C function's name); "" when it has none. */
    String name(MemorySegment program) {
        try {
            MemorySegment p = (MemorySegment) programName.invokeExact(program);
            return p.equals(MemorySegment.NULL) ? "" : p.reinterpret(256).getString(0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    int id(MemorySegment program) {
        try { return (int) programId.invokeExact(program); } catch (Throwable t) { throw rethrow(t); }
    }

    int runPriority(MemorySegment program) {
        try { return (int) runPrio.invokeExact(program); } catch (Throwable t) { throw rethrow(t); }
    }

    boolean chainCallEnabled(MemorySegment program, int action) {
        try { return (boolean) chainCall.invokeExact(program, action); } catch (Throwable t) { throw rethrow(t); }
    }

    void close(MemorySegment program) {
        try { programClose.invokeExact(program); } catch (Throwable t) { throw rethrow(t); }
    }

    int attach(MemorySegment program, int ifindex, int mode) {
        try { return (int) attach.invokeExact(program, ifindex, mode, 0); } catch (Throwable t) { throw rethrow(t); }
    }

    int detach(MemorySegment program, int ifindex, int mode) {
        try { return (int) detach.invokeExact(program, ifindex, mode, 0); } catch (Throwable t) { throw rethrow(t); }
    }

    MemorySegment fromBpfObject(MemorySegment bpfObject) {
        try { return (MemorySegment) fromBpfObj.invokeExact(bpfObject, MemorySegment.NULL); } catch (Throwable t) { throw rethrow(t); }
    }

    /** libxdp's handle on the loaded program with kernel id {@code id} (a dispatcher's component, to detach it). */
    MemorySegment fromId(int id) {
        try { return (MemorySegment) fromId.invokeExact(id); } catch (Throwable t) { throw rethrow(t); }
    }

    MemorySegment openFile(MemorySegment path) {
        try {
            return (MemorySegment) openFile.invokeExact(path, MemorySegment.NULL, MemorySegment.NULL);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    MemorySegment multiprog(int ifindex) {
        try { return (MemorySegment) multiprogGet.invokeExact(ifindex); } catch (Throwable t) { throw rethrow(t); }
    }

    MemorySegment next(MemorySegment program, MemorySegment multiprog) {
        try { return (MemorySegment) multiprogNext.invokeExact(program, multiprog); } catch (Throwable t) { throw rethrow(t); }
    }

    boolean isLegacy(MemorySegment multiprog) {
        try { return (boolean) multiprogIsLegacy.invokeExact(multiprog); } catch (Throwable t) { throw rethrow(t); }
    }

    MemorySegment mainProgram(MemorySegment multiprog) {
        try { return (MemorySegment) multiprogMain.invokeExact(multiprog); } catch (Throwable t) { throw rethrow(t); }
    }

    /** Before the program is loaded: whether it is loaded with fragment support (BPF_F_XDP_HAS_FRAGS); 0 or -errno. */
    int setFragsSupport(MemorySegment program, boolean frags) {
        try { return (int) setFrags.invokeExact(program, frags); } catch (Throwable t) { throw rethrow(t); }
    }

    boolean fragsSupport(MemorySegment multiprog) {
        try { return (boolean) multiprogFrags.invokeExact(multiprog); } catch (Throwable t) { throw rethrow(t); }
    }

    void closeMultiprog(MemorySegment multiprog) {
        try { multiprogClose.invokeExact(multiprog); } catch (Throwable t) { throw rethrow(t); }
    }
}
