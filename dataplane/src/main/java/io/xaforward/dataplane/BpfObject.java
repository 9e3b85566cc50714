package io.xaforward.dataplane;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.Map;

/**
 * A BPF ELF object opened and loaded through libbpf: the owner of its programs' and maps' file descriptors.
 * {@link #openResource} extracts an object shipped inside the jar to a temporary file first, because libbpf opens
 * by path. Not thread-safe; close it once (closing releases every fd, which detaches nothing by itself:
 * ({@link XdpAttachment}s hold their own reference to the program).
 */
public final class BpfObject implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(BpfObject.class.getName());

    private final String origin;
    private MemorySegment handle;
    private final Path tempFile;
    private boolean loaded;
    private final Map<String, BpfMap> maps = new HashMap<>();

    private BpfObject(String origin, MemorySegment handle, Path tempFile) {
        this.origin = origin;
        this.handle = handle;
        this.tempFile = tempFile;
    }

    /** Opens (parses, does not load) the object at {@code path}. */
    public static BpfObject open(Path path) {
        return open(path, path.toString(), null);
    }

    private static BpfObject open(Path path, String origin, Path temp) {
        try (Arena arena = Arena.ofConfined()) {
            LibBpf.PointerResult r = LibBpf.objectOpenFile(arena.allocateFrom(path.toString()));
            if (r.isNull()) {
                throw new BpfException("bpf_object__open_file('" + path + "')", r.errno());
            }
            return new BpfObject(origin, r.pointer(), temp);
        }
    }

    /** Extracts classpath resource {@code resource} (e.g. "bpf/xaf_gateway.bpf.o") to a temp file and opens it. */
    public static BpfObject openResource(String resource) {
        Path temp = null;
        try (InputStream in = BpfObject.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new BpfException("open classpath resource '" + resource + "' (was the BPF object built?)", 2);
            }
            temp = Files.createTempFile("xaf-bpf-", ".o");
            Files.copy(in, temp, StandardCopyOption.REPLACE_EXISTING);
            return open(temp, "classpath:" + resource, temp);
        } catch (IOException e) {
            deleteQuietly(temp);
            throw new UncheckedIOException("extracting " + resource, e);
        } catch (RuntimeException e) {
            deleteQuietly(temp);
            throw e;
        }
    }

    private static void deleteQuietly(Path p) {
        if (p == null) return;
        try {
            Files.deleteIfExists(p);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, "could not delete " + p, e);
        }
    }

    private MemorySegment handle() {
        if (handle == null) throw new IllegalStateException("BPF object " + origin + " is closed");
        return handle;
    }

    /**
     * Before {@link #load}: makes the object use the existing map {@code fd} for its map {@code name} instead of
     * creating one (libbpf dups the fd; the caller keeps its own). The shapes must match.
     */
    public void reuseMap(String name, int fd) {
        if (loaded) throw new IllegalStateException("reuseMap must come before load");
        try (Arena arena = Arena.ofConfined()) {
            LibBpf.PointerResult r = LibBpf.findMap(handle(), arena.allocateFrom(name));
            if (r.isNull()) throw new BpfException("bpf_object__find_map_by_name('" + name + "') in " + origin, r.errno());
            KernelObjects.MapInfo existing = KernelObjects.map(fd);
            MemorySegment m = r.pointer();
            if (existing.type() != LibBpf.mapType(m) || existing.keySize() != LibBpf.mapKeySize(m)
                    || existing.valueSize() != LibBpf.mapValueSize(m) || existing.maxEntries() != LibBpf.mapMaxEntries(m)) {
                throw new IllegalStateException("map '" + name + "' to reuse (type " + existing.type() + ", key " + existing.keySize()
                        + ", value " + existing.valueSize() + ", max " + existing.maxEntries() + ") does not match " + origin
                        + " (type " + LibBpf.mapType(m) + ", key " + LibBpf.mapKeySize(m) + ", value " + LibBpf.mapValueSize(m)
                        + ", max " + LibBpf.mapMaxEntries(m) + "): it comes from another build");
            }
            int rc = LibBpf.mapReuseFd(m, fd);
            if (rc != 0) throw new BpfException("bpf_map__reuse_fd('" + name + "')", rc);
        }
    }

    /** Loads every program and creates every map; a verifier rejection carries the verifier log. */
    public BpfObject load() {
        MemorySegment h = handle();
        LibBpf.startCapture();
        int rc;
        String log;
        try {
            rc = LibBpf.objectLoad(h);
        } finally {
            log = LibBpf.stopCapture();
        }
        if (rc != 0) {
            throw new BpfException("bpf_object__load(" + origin + ")", rc, log);
        }
        loaded = true;
        return this;
    }

    private void requireLoaded() {
        handle();
        if (!loaded) throw new IllegalStateException("BPF object " + origin + " is not loaded yet");
    }

    /** The fd of the program whose C function is named {@code name}. */
    public int programFd(String name) {
        requireLoaded();
        try (Arena arena = Arena.ofConfined()) {
            LibBpf.PointerResult r = LibBpf.findProgram(handle, arena.allocateFrom(name));
            if (r.isNull()) throw new BpfException("bpf_object__find_program_by_name('" + name + "') in " + origin, r.errno());
            int fd = LibBpf.programFd(r.pointer());
            if (fd < 0) throw new BpfException("bpf_program__fd('" + name + "')", fd);
            return fd;
        }
    }

    /** The map named {@code name}. */
    public BpfMap map(String name) {
        requireLoaded();
        BpfMap cached = maps.get(name);
        if (cached != null) return cached;
        try (Arena arena = Arena.ofConfined()) {
            LibBpf.PointerResult r = LibBpf.findMap(handle, arena.allocateFrom(name));
            if (r.isNull()) throw new BpfException("bpf_object__find_map_by_name('" + name + "') in " + origin, r.errno());
            MemorySegment m = r.pointer();
            int fd = LibBpf.mapFd(m);
            if (fd < 0) throw new BpfException("bpf_map__fd('" + name + "')", fd);
            BpfMap map = new BpfMap(name, fd, LibBpf.mapType(m), LibBpf.mapKeySize(m), LibBpf.mapValueSize(m), LibBpf.mapMaxEntries(m));
            maps.put(name, map);
            return map;
        }
    }

    public String origin() { return origin; }

    /** The libbpf {@code struct bpf_object *}, for a library that takes the object (libxdp). */
    MemorySegment nativeHandle() { return handle(); }

    /** The libbpf {@code struct bpf_program *} of the program whose C function is {@code name} (loaded or not). */
    MemorySegment nativeProgram(String name) {
        try (Arena arena = Arena.ofConfined()) {
            LibBpf.PointerResult r = LibBpf.findProgram(handle(), arena.allocateFrom(name));
            if (r.isNull()) throw new BpfException("bpf_object__find_program_by_name('" + name + "') in " + origin, r.errno());
            return r.pointer();
        }
    }

    /** Records that another library (libxdp, when it attaches the program) loaded this object. */
    void loadedElsewhere() {
        handle();
        loaded = true;
    }

    public boolean isLoaded() { return loaded && handle != null; }

    /** Releases programs and maps (idempotent) and deletes an extracted temp file. */
    @Override
    public void close() {
        if (handle != null) {
            LibBpf.objectClose(handle);
            handle = null;
            maps.clear();
        }
        deleteQuietly(tempFile);
    }
}
