package io.xaforward.dataplane;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The part of libbpf.so.1 (and libc) the control plane needs, bound once through java.lang.foreign: no JNI and no
 * bpftool in the core path. Int-returning libbpf calls report failure as {@code -errno}; pointer-returning calls
 * return NULL and set errno, so those downcalls capture errno ({@link Linker.Option#captureCallState}).
 *
 * <p>libbpf's print callback is routed into Java: every line goes to the {@code io.xaforward.dataplane.libbpf}
 * System.Logger, and between {@link #startCapture} and {@link #stopCapture} on a thread the lines are also collected, so a failed
 * load can carry the verifier log in its {@link BpfException}. The upcall catches everything: an exception
 * escaping an upcall would kill the JVM.
 *
 * <p>Methods here are thin: they return raw results; callers turn them into {@link BpfException}s with context.
 */
public final class LibBpf {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final System.Logger LOG = System.getLogger("io.xaforward.dataplane.libbpf");
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    private static final SymbolLookup BPF = SymbolLookup.libraryLookup("libbpf.so.1", Arena.global());
    private static final SymbolLookup LIBC = LINKER.defaultLookup();

    private static final MethodHandle OPEN_FILE = errnoHandle("bpf_object__open_file", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
    private static final MethodHandle LOAD = handle("bpf_object__load", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle CLOSE = handle("bpf_object__close", FunctionDescriptor.ofVoid(ADDRESS));
    private static final MethodHandle FIND_PROGRAM = errnoHandle("bpf_object__find_program_by_name", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
    private static final MethodHandle PROGRAM_FD = handle("bpf_program__fd", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle FIND_MAP = errnoHandle("bpf_object__find_map_by_name", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
    private static final MethodHandle MAP_FD = handle("bpf_map__fd", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle MAP_TYPE = handle("bpf_map__type", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle MAP_KEY_SIZE = handle("bpf_map__key_size", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle MAP_VALUE_SIZE = handle("bpf_map__value_size", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle MAP_MAX_ENTRIES = handle("bpf_map__max_entries", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle MAP_UPDATE = handle("bpf_map_update_elem", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG));
    private static final MethodHandle MAP_LOOKUP = handle("bpf_map_lookup_elem", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle MAP_DELETE = handle("bpf_map_delete_elem", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle MAP_NEXT_KEY = handle("bpf_map_get_next_key", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle NUM_CPUS = handle("libbpf_num_possible_cpus", FunctionDescriptor.of(JAVA_INT));
    private static final MethodHandle XDP_ATTACH = handle("bpf_xdp_attach", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle XDP_DETACH = handle("bpf_xdp_detach", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle XDP_QUERY_ID = handle("bpf_xdp_query_id", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle ENABLE_STATS = handle("bpf_enable_stats", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle PROG_FD_BY_ID = handle("bpf_prog_get_fd_by_id", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle OBJ_GET_INFO = handle("bpf_obj_get_info_by_fd", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle LINK_CREATE = handle("bpf_link_create", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle LINK_DETACH = handle("bpf_link_detach", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle LINK_UPDATE = handle("bpf_link_update", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle LINK_FD_BY_ID = handle("bpf_link_get_fd_by_id", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle LINK_NEXT_ID = handle("bpf_link_get_next_id", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle MAP_FD_BY_ID = handle("bpf_map_get_fd_by_id", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle OBJ_PIN = handle("bpf_obj_pin", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle OBJ_GET = handle("bpf_obj_get", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle MAP_REUSE_FD = handle("bpf_map__reuse_fd", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle SET_AUTOLOAD = handle("bpf_program__set_autoload", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BOOLEAN));
    private static final MethodHandle SET_ATTACH_TARGET = handle("bpf_program__set_attach_target", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
    private static final MethodHandle CLOSE_FD = LINKER.downcallHandle(LIBC.findOrThrow("close"), FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle STRERROR = handle("libbpf_strerror", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle SET_PRINT = handle("libbpf_set_print", FunctionDescriptor.of(ADDRESS, ADDRESS));
    private static final MethodHandle VSNPRINTF = LINKER.downcallHandle(LIBC.findOrThrow("vsnprintf"),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS));
    private static final MethodHandle IF_NAMETOINDEX = LINKER.downcallHandle(LIBC.findOrThrow("if_nametoindex"),
            FunctionDescriptor.of(JAVA_INT, ADDRESS), Linker.Option.captureCallState("errno"));

    /** libbpf print levels (enum libbpf_print_level). */
    private static final int LIBBPF_WARN = 0, LIBBPF_INFO = 1;
    private static final int PRINT_BUFFER = 8192;
    private static final ThreadLocal<StringBuilder> CAPTURED = new ThreadLocal<>();
    /** While set on a thread, libbpf's lines are only collected (and logged at DEBUG): an expected failure, a probe. */
    private static final ThreadLocal<Boolean> QUIET = new ThreadLocal<>();

    static {
        try {
            MethodHandle target = MethodHandles.lookup().findStatic(LibBpf.class, "onPrint",
                    MethodType.methodType(int.class, int.class, MemorySegment.class, MemorySegment.class));
            MemorySegment stub = LINKER.upcallStub(target, FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS), Arena.global());
            MemorySegment ignored = (MemorySegment) SET_PRINT.invokeExact(stub);
        } catch (Throwable t) {
            throw new ExceptionInInitializerError(t);
        }
    }

    private LibBpf() {}

    private static MethodHandle handle(String name, FunctionDescriptor fd) {
        return LINKER.downcallHandle(BPF.findOrThrow(name), fd);
    }

    private static MethodHandle errnoHandle(String name, FunctionDescriptor fd) {
        return LINKER.downcallHandle(BPF.findOrThrow(name), fd, Linker.Option.captureCallState("errno"));
    }

    /**
     * libbpf's print callback: format with vsnprintf, log, and collect when capturing. Never throws. libxdp, whose
     * print callback has the same signature, prints through it too ({@link LibXdp}).
     */
    static int onPrint(int level, MemorySegment fmt, MemorySegment args) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(PRINT_BUFFER);
            int n = (int) VSNPRINTF.invokeExact(buf, (long) PRINT_BUFFER, fmt, args);
            String line = buf.getString(0);
            StringBuilder sink = CAPTURED.get();
            if (sink != null) {
                sink.append(line);
            }
            System.Logger.Level jl = QUIET.get() != null ? System.Logger.Level.DEBUG
                    : level == LIBBPF_WARN ? System.Logger.Level.WARNING
                    : level == LIBBPF_INFO ? System.Logger.Level.INFO : System.Logger.Level.DEBUG;
            if (LOG.isLoggable(jl)) {
                LOG.log(jl, line.stripTrailing());
            }
            return n;
        } catch (Throwable t) {
            return 0;
        }
    }

    /** Starts collecting libbpf output on this thread; {@link #stopCapture} returns it. */
    static void startCapture() { CAPTURED.set(new StringBuilder()); }

    /** As {@link #startCapture}, logging the lines at DEBUG only until {@link #stopCapture}: for a probe expected to fail. */
    static void startQuietCapture() {
        startCapture();
        QUIET.set(Boolean.TRUE);
    }

    static String stopCapture() {
        StringBuilder sb = CAPTURED.get();
        CAPTURED.remove();
        QUIET.remove();
        return sb == null ? "" : sb.toString();
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException(t);
    }

    /** Text for a positive (or negative) errno, including libbpf's own error codes. */
    public static String strerror(int errno) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(256);
            int ignored = (int) STRERROR.invokeExact(Math.abs(errno), buf, 256L);
            String s = buf.getString(0);
            return s.isEmpty() ? "error " + errno : s;
        } catch (Throwable t) {
            return "error " + errno;
        }
    }

    /** Result of a pointer-returning call: the pointer, or NULL with the errno the call set. */
    record PointerResult(MemorySegment pointer, int errno) {
        boolean isNull() { return pointer.equals(MemorySegment.NULL); }
    }

    private static PointerResult callPointer(MethodHandle h, MemorySegment a, MemorySegment b) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            MemorySegment p = (MemorySegment) h.invokeExact(state, a, b);
            int errno = p.equals(MemorySegment.NULL) ? (int) ERRNO.get(state, 0L) : 0;
            return new PointerResult(p, errno);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static PointerResult objectOpenFile(MemorySegment path) { return callPointer(OPEN_FILE, path, MemorySegment.NULL); }
    static PointerResult findProgram(MemorySegment obj, MemorySegment name) { return callPointer(FIND_PROGRAM, obj, name); }
    static PointerResult findMap(MemorySegment obj, MemorySegment name) { return callPointer(FIND_MAP, obj, name); }

    static int objectLoad(MemorySegment obj) {
        try { return (int) LOAD.invokeExact(obj); } catch (Throwable t) { throw rethrow(t); }
    }

    static void objectClose(MemorySegment obj) {
        try { CLOSE.invokeExact(obj); } catch (Throwable t) { throw rethrow(t); }
    }

    static int programFd(MemorySegment prog) {
        try { return (int) PROGRAM_FD.invokeExact(prog); } catch (Throwable t) { throw rethrow(t); }
    }

    static int mapFd(MemorySegment map) {
        try { return (int) MAP_FD.invokeExact(map); } catch (Throwable t) { throw rethrow(t); }
    }

    static int mapType(MemorySegment map) {
        try { return (int) MAP_TYPE.invokeExact(map); } catch (Throwable t) { throw rethrow(t); }
    }

    static int mapKeySize(MemorySegment map) {
        try { return (int) MAP_KEY_SIZE.invokeExact(map); } catch (Throwable t) { throw rethrow(t); }
    }

    static int mapValueSize(MemorySegment map) {
        try { return (int) MAP_VALUE_SIZE.invokeExact(map); } catch (Throwable t) { throw rethrow(t); }
    }

    static int mapMaxEntries(MemorySegment map) {
        try { return (int) MAP_MAX_ENTRIES.invokeExact(map); } catch (Throwable t) { throw rethrow(t); }
    }

    static int mapUpdate(int fd, MemorySegment key, MemorySegment value, long flags) {
        try { return (int) MAP_UPDATE.invokeExact(fd, key, value, flags); } catch (Throwable t) { throw rethrow(t); }
    }

    static int mapLookup(int fd, MemorySegment key, MemorySegment value) {
        try { return (int) MAP_LOOKUP.invokeExact(fd, key, value); } catch (Throwable t) { throw rethrow(t); }
    }

    static int mapDelete(int fd, MemorySegment key) {
        try { return (int) MAP_DELETE.invokeExact(fd, key); } catch (Throwable t) { throw rethrow(t); }
    }

    /** Next key after {@code key} (NULL: the first) into {@code next}; -ENOENT after the last. */
    static int mapNextKey(int fd, MemorySegment key, MemorySegment next) {
        try { return (int) MAP_NEXT_KEY.invokeExact(fd, key, next); } catch (Throwable t) { throw rethrow(t); }
    }

    /** Number of possible CPUs: the per-CPU map value count. */
    public static int numPossibleCpus() {
        try {
            int n = (int) NUM_CPUS.invokeExact();
            if (n <= 0) throw new BpfException("libbpf_num_possible_cpus()", -n);
            return n;
        } catch (Throwable t) { throw rethrow(t); }
    }

    static int xdpAttach(int ifindex, int progFd, int flags, MemorySegment opts) {
        try { return (int) XDP_ATTACH.invokeExact(ifindex, progFd, flags, opts); } catch (Throwable t) { throw rethrow(t); }
    }

    static int xdpDetach(int ifindex, int flags, MemorySegment opts) {
        try { return (int) XDP_DETACH.invokeExact(ifindex, flags, opts); } catch (Throwable t) { throw rethrow(t); }
    }

    static int xdpQueryId(int ifindex, int flags, MemorySegment progId) {
        try { return (int) XDP_QUERY_ID.invokeExact(ifindex, flags, progId); } catch (Throwable t) { throw rethrow(t); }
    }

    /** bpf_enable_stats(type): a file descriptor that keeps the statistics on until closed, or -errno. */
    static int enableStats(int type) {
        try { return (int) ENABLE_STATS.invokeExact(type); } catch (Throwable t) { throw rethrow(t); }
    }

    /** bpf_prog_get_fd_by_id: a new fd for a loaded program, or -errno. */
    static int progFdById(int id) {
        try { return (int) PROG_FD_BY_ID.invokeExact(id); } catch (Throwable t) { throw rethrow(t); }
    }

    /** bpf_obj_get_info_by_fd: fills {@code info} (its size in {@code len}), 0 or -errno. */
    static int objGetInfo(int fd, MemorySegment info, MemorySegment len) {
        try { return (int) OBJ_GET_INFO.invokeExact(fd, info, len); } catch (Throwable t) { throw rethrow(t); }
    }

    /** bpf_link_create(prog_fd, target_fd, attach_type, opts): a link fd, or -errno. */
    static int linkCreate(int progFd, int targetFd, int attachType, MemorySegment opts) {
        try { return (int) LINK_CREATE.invokeExact(progFd, targetFd, attachType, opts); } catch (Throwable t) { throw rethrow(t); }
    }

    /** bpf_link_detach: detaches the link's program now, even if other fds or pins hold the link; 0 or -errno. */
    static int linkDetach(int linkFd) {
        try { return (int) LINK_DETACH.invokeExact(linkFd); } catch (Throwable t) { throw rethrow(t); }
    }

    /** bpf_link_update: atomically makes the link run another program; 0 or -errno. */
    static int linkUpdate(int linkFd, int newProgFd, MemorySegment opts) {
        try { return (int) LINK_UPDATE.invokeExact(linkFd, newProgFd, opts); } catch (Throwable t) { throw rethrow(t); }
    }

    static int linkFdById(int id) {
        try { return (int) LINK_FD_BY_ID.invokeExact(id); } catch (Throwable t) { throw rethrow(t); }
    }

    /** The next link id after {@code id} into {@code next}; -ENOENT after the last. */
    static int linkNextId(int id, MemorySegment next) {
        try { return (int) LINK_NEXT_ID.invokeExact(id, next); } catch (Throwable t) { throw rethrow(t); }
    }

    static int mapFdById(int id) {
        try { return (int) MAP_FD_BY_ID.invokeExact(id); } catch (Throwable t) { throw rethrow(t); }
    }

    /** bpf_obj_pin: pins a map, program or link fd at a bpffs path; 0 or -errno. */
    static int objPin(int fd, MemorySegment path) {
        try { return (int) OBJ_PIN.invokeExact(fd, path); } catch (Throwable t) { throw rethrow(t); }
    }

    /** bpf_obj_get: a new fd for the object pinned at a bpffs path, or -errno. */
    static int objGet(MemorySegment path) {
        try { return (int) OBJ_GET.invokeExact(path); } catch (Throwable t) { throw rethrow(t); }
    }

    /** bpf_map__reuse_fd: before load, makes the object use an existing map instead of creating one; 0 or -errno. */
    static int mapReuseFd(MemorySegment map, int fd) {
        try { return (int) MAP_REUSE_FD.invokeExact(map, fd); } catch (Throwable t) { throw rethrow(t); }
    }

    /** bpf_program__set_autoload: before load, whether the object's load loads this program; 0 or -errno. */
    static int setAutoload(MemorySegment prog, boolean autoload) {
        try { return (int) SET_AUTOLOAD.invokeExact(prog, autoload); } catch (Throwable t) { throw rethrow(t); }
    }

    /**
     * bpf_program__set_attach_target: before load, the program (by fd) and function an extension (freplace) program
     * replaces; 0 or -errno.
     */
    static int setAttachTarget(MemorySegment prog, int targetFd, MemorySegment function) {
        try { return (int) SET_ATTACH_TARGET.invokeExact(prog, targetFd, function); } catch (Throwable t) { throw rethrow(t); }
    }

    static void closeFd(int fd) {
        try { int ignored = (int) CLOSE_FD.invokeExact(fd); } catch (Throwable t) { throw rethrow(t); }
    }

    /**
     * The ifindex of {@code name} in this process's network namespace.
     *
     * @throws BpfException naming the interface when it does not exist
     */
    public static int ifNameToIndex(String name) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            int idx = (int) IF_NAMETOINDEX.invokeExact(state, arena.allocateFrom(name));
            if (idx == 0) {
                int errno = (int) ERRNO.get(state, 0L);
                throw new BpfException("if_nametoindex('" + name + "'): no such interface in this network namespace",
                        errno == 0 ? 19 : errno);
            }
            return idx;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

}
