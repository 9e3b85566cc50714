package io.xaforward.dataplane;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * What the kernel says about loaded BPF programs, maps and links (bpf_obj_get_info_by_fd on struct bpf_prog_info,
 * bpf_map_info and bpf_link_info, stable uapi): how a process finds the maps of a program another process loaded,
 * and which XDP link holds an interface, without bpftool.
 */
public final class KernelObjects {
    private static final int ENOENT = 2;
    /** enum bpf_link_type: BPF_LINK_TYPE_XDP. */
    static final int LINK_TYPE_XDP = 6;
    private static final int MAX_MAP_IDS = 64;

    private KernelObjects() {}

    /** A loaded program: its id, its name (at most 15 characters) and the ids of the maps it uses. */
    public record ProgramInfo(int id, String name, List<Integer> mapIds) {}

    /** A map: id, name, bpf_map_type, key and value sizes, capacity. */
    public record MapInfo(int id, String name, int type, int keySize, int valueSize, int maxEntries) {}

    /** A link: id, bpf_link_type, the program it runs, and for an XDP link the interface index (0 otherwise). */
    public record LinkInfo(int id, int type, int programId, int xdpIfindex) {
        public boolean isXdp() { return type == LINK_TYPE_XDP; }
    }

    private static MemorySegment info(Arena arena, int fd, long size, String what, Consumer<MemorySegment> prepare) {
        MemorySegment info = arena.allocate(size, 8);
        prepare.accept(info);
        MemorySegment len = arena.allocateFrom(ValueLayout.JAVA_INT, (int) size);
        int rc = LibBpf.objGetInfo(fd, info, len);
        if (rc != 0) throw new BpfException("bpf_obj_get_info_by_fd(" + what + " fd " + fd + ")", rc);
        return info;
    }

    private static String name(MemorySegment info, long offset) {
        return info.asSlice(offset, 16).getString(0);
    }

    /** struct bpf_prog_info: id at 4, nr_map_ids at 52, map_ids (a pointer) at 56, name at 64. */
    public static ProgramInfo program(int progFd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ids = arena.allocate(4L * MAX_MAP_IDS, 8);
            MemorySegment info = info(arena, progFd, ProgramRunStats.INFO_SIZE, "program", i -> {
                i.set(ValueLayout.JAVA_INT, 52, MAX_MAP_IDS);
                i.set(ValueLayout.JAVA_LONG, 56, ids.address());
            });
            int n = Math.min(info.get(ValueLayout.JAVA_INT, 52), MAX_MAP_IDS);
            List<Integer> mapIds = new ArrayList<>(n);
            for (int k = 0; k < n; k++) mapIds.add(ids.getAtIndex(ValueLayout.JAVA_INT, k));
            return new ProgramInfo(info.get(ValueLayout.JAVA_INT, 4), name(info, 64), List.copyOf(mapIds));
        }
    }

    /** struct bpf_map_info: type 0, id 4, key_size 8, value_size 12, max_entries 16, name 24. */
    public static MapInfo map(int mapFd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment info = info(arena, mapFd, 96, "map", i -> {});
            return new MapInfo(info.get(ValueLayout.JAVA_INT, 4), name(info, 24), info.get(ValueLayout.JAVA_INT, 0),
                    info.get(ValueLayout.JAVA_INT, 8), info.get(ValueLayout.JAVA_INT, 12), info.get(ValueLayout.JAVA_INT, 16));
        }
    }

    /** struct bpf_link_info: type 0, id 4, prog_id 8, then the per-type union at 16 (xdp: ifindex). */
    public static LinkInfo link(int linkFd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment info = info(arena, linkFd, 128, "link", i -> {});
            int type = info.get(ValueLayout.JAVA_INT, 0);
            return new LinkInfo(info.get(ValueLayout.JAVA_INT, 4), type, info.get(ValueLayout.JAVA_INT, 8),
                    type == LINK_TYPE_XDP ? info.get(ValueLayout.JAVA_INT, 16) : 0);
        }
    }

    /** A new fd for the program with this id (the caller closes it). */
    public static int programFdById(int id) {
        int fd = LibBpf.progFdById(id);
        if (fd < 0) throw new BpfException("bpf_prog_get_fd_by_id(" + id + ")", fd);
        return fd;
    }

    /** A new fd for the map with this id (the caller closes it). */
    public static int mapFdById(int id) {
        int fd = LibBpf.mapFdById(id);
        if (fd < 0) throw new BpfException("bpf_map_get_fd_by_id(" + id + ")", fd);
        return fd;
    }

    /** Every XDP link in the kernel (links on interfaces of other namespaces included: ifindexes are per namespace). */
    public static List<LinkInfo> xdpLinks() {
        List<LinkInfo> links = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment next = arena.allocate(ValueLayout.JAVA_INT);
            int id = 0;
            while (true) {
                int rc = LibBpf.linkNextId(id, next);
                if (rc == -ENOENT) return links;
                if (rc != 0) throw new BpfException("bpf_link_get_next_id(" + id + ")", rc);
                id = next.get(ValueLayout.JAVA_INT, 0);
                int fd = LibBpf.linkFdById(id);
                if (fd < 0) continue; // gone meanwhile
                try {
                    LinkInfo l = link(fd);
                    if (l.isXdp()) links.add(l);
                } finally {
                    LibBpf.closeFd(fd);
                }
            }
        }
    }

    /** Closes a file descriptor this class handed out. */
    public static void close(int fd) {
        LibBpf.closeFd(fd);
    }
}
