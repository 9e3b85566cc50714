package io.xaforward.training;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Large blocks come from the heap, not from a fresh mmap per allocation, once the trainer's runtime is set up. */
class NativeHeapTest {
    private static final Linker LINKER = Linker.nativeLinker();
    /** glibc's struct mallinfo2: ten size_t fields; hblkhd (bytes in mmapped blocks) is the fifth. */
    private static final StructLayout MALLINFO2 = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(10, ValueLayout.JAVA_LONG));

    private static MethodHandle function(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(LINKER.defaultLookup().find(name).orElseThrow(), descriptor);
    }

    private static long mmappedBytes(MethodHandle mallinfo2) throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment info = (MemorySegment) mallinfo2.invokeExact((java.lang.foreign.SegmentAllocator) arena);
            return info.getAtIndex(ValueLayout.JAVA_LONG, 4);
        }
    }

    @Test
    void aBlockAboveGlibcsLargestMmapThresholdIsNotMapped() throws Throwable {
        assertTrue(NativeHeap.keepLargeBlocks(), "mallopt refused the setting");
        MethodHandle mallinfo2 = function("mallinfo2", FunctionDescriptor.of(MALLINFO2));
        MethodHandle malloc = function("malloc", FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
        MethodHandle free = function("free", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
        long before = mmappedBytes(mallinfo2);
        // 40 MB: above the 32 MB that glibc's dynamic threshold can reach, so by default always a fresh mmap
        MemorySegment block = (MemorySegment) malloc.invokeExact(40L << 20);
        try {
            assertTrue(block.address() != 0);
            assertEquals(before, mmappedBytes(mallinfo2), "a 40 MB block was mmapped");
        } finally {
            free.invokeExact(block);
        }
    }
}
