package io.xaforward.training;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Keeps the C heap's large blocks in the process between training steps. libtorch allocates every tensor with malloc,
 * and glibc serves blocks above its mmap threshold (at most 32 MB) with a fresh mmap that free() unmaps again: each
 * step of a model with a large output layer (gpt2-tiny's logits at batch 4 are 51 MB, and backward makes several such
 * tensors) then page-faults and zeroes all of them anew. Measured in `xaf bench compute` (docs/TRAINING.md, "Where a
 * step's time goes"): the kernel's page-fault path took 37% of a gpt2-tiny step. With mmap off and trimming of the
 * heap's top raised, freed blocks are reused by the next step instead; the cost is that the process keeps its peak
 * heap (the trainer's working set) instead of returning it between steps.
 *
 * <p>The setting is glibc's and process-wide; it changes where memory comes from, never what a computation yields.
 * On a C library without {@code mallopt} (not glibc) nothing changes.
 */
final class NativeHeap {
    /** mallopt parameters (glibc malloc.h). */
    private static final int M_TRIM_THRESHOLD = -1;
    private static final int M_MMAP_MAX = -4;
    /** Free memory at the heap's top returned to the system only above this (the largest int mallopt takes). */
    private static final int TRIM_THRESHOLD = Integer.MAX_VALUE;

    private static boolean applied;

    private NativeHeap() {
    }

    /** Applies the setting once per process; returns whether the C library took it. */
    static synchronized boolean keepLargeBlocks() {
        if (applied) return true;
        if (Boolean.getBoolean("xaf.training.mmapTensors")) return false; // glibc's default, for comparison runs
        MethodHandle mallopt = Linker.nativeLinker().defaultLookup().find("mallopt")
                .map(address -> Linker.nativeLinker().downcallHandle(address,
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT)))
                .orElse(null);
        if (mallopt == null) return false;
        try {
            // mallopt returns 1 on success, 0 on error
            applied = (int) mallopt.invokeExact(M_MMAP_MAX, 0) == 1
                    & (int) mallopt.invokeExact(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1;
        } catch (Throwable e) {
            throw new IllegalStateException("mallopt failed", e);
        }
        return applied;
    }
}
