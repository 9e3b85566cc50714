package io.xaforward.dataplane;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * One map of a loaded {@link BpfObject}: update, lookup and delete through the map fd with keys and values in
 * {@link MemorySegment}s whose sizes are checked against the map's own key/value sizes (a wrong size would make the
 * kernel read or write past the caller's buffer). Per-CPU maps are read as value_size x possible CPUs and summed.
 */
public final class BpfMap {
    /** Map update flags (BPF_ANY, BPF_NOEXIST, BPF_EXIST). */
    public static final long ANY = 0, NOEXIST = 1, EXIST = 2;
    /** bpf_map_type values this project uses. */
    public static final int TYPE_HASH = 1, TYPE_ARRAY = 2, TYPE_PERCPU_ARRAY = 6, TYPE_DEVMAP = 14, TYPE_XSKMAP = 17;

    private static final int ENOENT = 2;

    private final String name;
    private final int fd;
    private final int type;
    private final int keySize;
    private final int valueSize;
    private final int maxEntries;

    BpfMap(String name, int fd, int type, int keySize, int valueSize, int maxEntries) {
        this.name = name;
        this.fd = fd;
        this.type = type;
        this.keySize = keySize;
        this.valueSize = valueSize;
        this.maxEntries = maxEntries;
    }

    /** A map known by fd (e.g. opened by id or from a pin); the caller owns the fd. */
    static BpfMap of(KernelObjects.MapInfo info, int fd) {
        return new BpfMap(info.name(), fd, info.type(), info.keySize(), info.valueSize(), info.maxEntries());
    }

    public String name() { return name; }
    public int fd() { return fd; }
    public int type() { return type; }
    public int keySize() { return keySize; }
    public int valueSize() { return valueSize; }
    public int maxEntries() { return maxEntries; }

    public boolean isPerCpu() { return type == TYPE_PERCPU_ARRAY || type == 5 /* PERCPU_HASH */ || type == 10 /* LRU_PERCPU_HASH */; }

    /** Bytes a lookup/update value buffer must have: value_size, or value_size rounded to 8 x CPUs for per-CPU maps. */
    public long valueBufferSize() {
        return isPerCpu() ? ((valueSize + 7L) & ~7L) * LibBpf.numPossibleCpus() : valueSize;
    }

    private void checkKey(MemorySegment key) {
        if (key.byteSize() != keySize) {
            throw new IllegalArgumentException("map '" + name + "': key is " + key.byteSize() + " bytes, map key_size is " + keySize);
        }
    }

    private void checkValue(MemorySegment value) {
        if (value.byteSize() != valueBufferSize()) {
            throw new IllegalArgumentException("map '" + name + "': value is " + value.byteSize() + " bytes, map needs "
                    + valueBufferSize() + (isPerCpu() ? " (value_size " + valueSize + " x " + LibBpf.numPossibleCpus() + " CPUs)" : " (value_size)"));
        }
    }

    /** Inserts or replaces; {@code flags} is {@link #ANY}, {@link #NOEXIST} or {@link #EXIST}. */
    public void update(MemorySegment key, MemorySegment value, long flags) {
        checkKey(key);
        checkValue(value);
        int rc = LibBpf.mapUpdate(fd, key, value, flags);
        if (rc != 0) throw new BpfException("bpf_map_update_elem(map '" + name + "')", rc);
    }

    /** Copies the value for {@code key} into {@code value}; false when the key is absent. */
    public boolean lookup(MemorySegment key, MemorySegment value) {
        checkKey(key);
        checkValue(value);
        int rc = LibBpf.mapLookup(fd, key, value);
        if (rc == -ENOENT) return false;
        if (rc != 0) throw new BpfException("bpf_map_lookup_elem(map '" + name + "')", rc);
        return true;
    }

    /** Removes {@code key}; false when it was absent. */
    public boolean delete(MemorySegment key) {
        checkKey(key);
        int rc = LibBpf.mapDelete(fd, key);
        if (rc == -ENOENT) return false;
        if (rc != 0) throw new BpfException("bpf_map_delete_elem(map '" + name + "')", rc);
        return true;
    }

    /** Every key of a map with u32 keys, as the kernel holds them now (for reconciling a hash map). */
    public List<Integer> intKeys() {
        if (keySize != 4) throw new IllegalArgumentException("map '" + name + "' does not have u32 keys");
        List<Integer> keys = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment current = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment next = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment from = MemorySegment.NULL;
            while (true) {
                int rc = LibBpf.mapNextKey(fd, from, next);
                if (rc == -ENOENT) return keys;
                if (rc != 0) throw new BpfException("bpf_map_get_next_key(map '" + name + "')", rc);
                keys.add(next.get(ValueLayout.JAVA_INT, 0));
                MemorySegment.copy(next, 0, current, 0, 4);
                from = current;
            }
        }
    }

    /** Convenience for u32 -> u32 maps (devmap, xskmap). */
    public void updateInt(int key, int value, long flags) {
        try (Arena arena = Arena.ofConfined()) {
            update(arena.allocateFrom(ValueLayout.JAVA_INT, key), arena.allocateFrom(ValueLayout.JAVA_INT, value), flags);
        }
    }

    /** Convenience for maps with a u32 key. */
    public boolean deleteInt(int key) {
        try (Arena arena = Arena.ofConfined()) {
            return delete(arena.allocateFrom(ValueLayout.JAVA_INT, key));
        }
    }

    /**
     * Sum over all CPUs of the u64 value at {@code key} of a per-CPU map with 8-byte values.
     * {@code scratch} must be {@link #valueBufferSize()} bytes (kept by the caller to avoid allocating).
     */
    public long sumPerCpuU64(int key, MemorySegment keyScratch, MemorySegment scratch) {
        if (!isPerCpu() || valueSize != 8) {
            throw new IllegalArgumentException("map '" + name + "' is not a per-CPU map of u64 values");
        }
        keyScratch.set(ValueLayout.JAVA_INT, 0, key);
        if (!lookup(keyScratch, scratch)) return 0;
        long sum = 0;
        for (long off = 0; off < scratch.byteSize(); off += 8) {
            sum += scratch.get(ValueLayout.JAVA_LONG, off);
        }
        return sum;
    }

    @Override
    public String toString() {
        return "BpfMap[" + name + " fd=" + fd + " type=" + type + " key=" + keySize + " value=" + valueSize + " max=" + maxEntries + "]";
    }
}
