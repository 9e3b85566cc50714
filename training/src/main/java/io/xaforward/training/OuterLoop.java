package io.xaforward.training;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

/**
 * DiLoCo's outer loop on one rank: the global parameters (the same on every rank of every data center), the outer
 * Nesterov momentum, and the fragments' pseudo-gradients while their all-reduce runs.
 *
 * <p>After inner step t, for every fragment whose sync starts then ({@link FragmentPlan}): its pseudo-gradient,
 * global minus this rank's parameters, is written into {@link #pseudo} and averaged over the data centers by the
 * outer reducer, on the outer thread when a delay D > 0 lets inner steps go on meanwhile, else at once. After step
 * t + D the result is applied (torch's SGD with {@code nesterov=True}, dampening 0):
 * <pre>
 *   m = mu * m + g;   global -= lr * (g + mu * m);   params = global
 * </pre>
 * so every rank continues that fragment from the identical new global parameters (the local progress of the D
 * steps in between is dropped for that fragment, as torchft does with its default mixing). The inner optimizer's
 * state is kept across rounds, as DiLoCo does.
 *
 * <p>All buffers are allocated once; a sync allocates nothing but the reducer's own work.
 */
final class OuterLoop implements AutoCloseable {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG;

    /** Names of the outer state's entries in a checkpoint header, after the parameters'. */
    static final List<String> CHECKPOINT_NAMES = List.of("diloco.global", "diloco.momentum", "diloco.pending",
            "diloco.apply_at");

    private final DilocoConfig config;
    private final FragmentPlan plan;
    private final List<MemorySegment> params;
    /** Flat float offset of each tensor, and the total at the end. */
    private final long[] tensorOffset;
    private final GradientReducer reducer;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment global;
    private final MemorySegment momentum;
    private final MemorySegment pseudo;
    /** Per fragment: the step after which its started sync is applied, or -1 when none is pending. */
    private final MemorySegment applyAt;
    private final Future<?>[] inFlight;
    private final ExecutorService outerThread;

    OuterLoop(DilocoConfig config, FragmentPlan plan, List<MemorySegment> params, GradientReducer reducer, int rank) {
        this.config = config;
        this.plan = plan;
        this.params = params;
        this.reducer = reducer;
        this.tensorOffset = new long[params.size() + 1];
        for (int i = 0; i < params.size(); i++) {
            tensorOffset[i + 1] = tensorOffset[i] + params.get(i).byteSize() / Float.BYTES;
        }
        long floats = tensorOffset[params.size()];
        this.global = arena.allocate(floats * Float.BYTES, 64);
        this.momentum = arena.allocate(floats * Float.BYTES, 64);
        this.pseudo = arena.allocate(floats * Float.BYTES, 64);
        this.applyAt = arena.allocate((long) plan.fragments() * Long.BYTES, 8);
        this.inFlight = new Future<?>[plan.fragments()];
        this.outerThread = config.fragmentSyncDelay() == 0 ? null : Executors.newSingleThreadExecutor(r -> {
            Thread thread = new Thread(r, "outer-allreduce-rank" + rank);
            thread.setDaemon(true);
            return thread;
        });
        reset();
    }

    /** Starts from the current parameters: global = params, no momentum, nothing pending. */
    void reset() {
        for (int p = 0; p < params.size(); p++) {
            MemorySegment.copy(params.get(p), 0, global, tensorOffset[p] * Float.BYTES, params.get(p).byteSize());
        }
        momentum.fill((byte) 0);
        pseudo.fill((byte) 0);
        for (int f = 0; f < plan.fragments(); f++) {
            applyAt.setAtIndex(I64, f, -1);
        }
    }

    /** Runs the schedule after inner step {@code step} (1-based count of completed steps). */
    StepStats.Outer afterStep(long step) {
        int started = 0;
        for (int f = 0; f < plan.fragments(); f++) {
            if (plan.startsSyncAfter(f, step)) {
                start(f, step);
                started++;
            }
        }
        return applyDue(step, started, false);
    }

    /**
     * The end of a run: every pending sync is applied now, and every fragment not synced after this step is synced
     * at once, so all ranks end with the identical global model.
     */
    StepStats.Outer finish(long step) {
        int started = 0;
        boolean[] current = new boolean[plan.fragments()];
        for (int f = 0; f < plan.fragments(); f++) {
            boolean startsNow = plan.startsSyncAfter(f, step);
            if (startsNow || applyAt.getAtIndex(I64, f) >= 0) {
                current[f] = true; // synced now or pending: applied below, leaving params == global
            }
            if (startsNow) {
                start(f, step);
                started++;
            }
        }
        for (int f = 0; f < plan.fragments(); f++) {
            if (!current[f]) {
                start(f, step);
                started++;
            }
        }
        return applyDue(step, started, true);
    }

    private StepStats.Outer applyDue(long step, int started, boolean all) {
        int applied = 0;
        long floats = 0;
        long waited = 0;
        for (int f = 0; f < plan.fragments(); f++) {
            long due = applyAt.getAtIndex(I64, f);
            if (due < 0 || (!all && due != step)) continue;
            long t0 = System.nanoTime();
            await(f);
            waited += System.nanoTime() - t0;
            apply(f);
            applied++;
            floats += fragmentFloats(f);
        }
        return started == 0 && applied == 0 ? StepStats.Outer.NONE : new StepStats.Outer(started, applied, floats, waited / 1e6);
    }

    private long fragmentFloats(int f) {
        return tensorOffset[plan.endTensor(f)] - tensorOffset[plan.firstTensor(f)];
    }

    private void start(int f, long step) {
        if (applyAt.getAtIndex(I64, f) >= 0) {
            throw new IllegalStateException("fragment " + f + " starts a sync after step " + step
                    + " while its previous one is still pending");
        }
        for (int p = plan.firstTensor(f); p < plan.endTensor(f); p++) {
            MemorySegment w = params.get(p);
            long base = tensorOffset[p];
            long n = w.byteSize() / Float.BYTES;
            for (long i = 0; i < n; i++) {
                pseudo.setAtIndex(F32, base + i, global.getAtIndex(F32, base + i) - w.getAtIndex(F32, i));
            }
        }
        applyAt.setAtIndex(I64, f, plan.applyStep(step));
        long from = tensorOffset[plan.firstTensor(f)];
        MemorySegment slice = pseudo.asSlice(from * Float.BYTES, fragmentFloats(f) * Float.BYTES);
        int count = Math.toIntExact(fragmentFloats(f));
        if (outerThread == null) {
            reducer.allReduceMean(slice, count);
        } else {
            inFlight[f] = outerThread.submit(() -> reducer.allReduceMean(slice, count));
        }
    }

    private void await(int f) {
        Future<?> pending = inFlight[f];
        if (pending == null) return;
        try {
            pending.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the outer all-reduce of fragment " + f, e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException r) throw r;
            throw new IllegalStateException("outer all-reduce of fragment " + f + " failed", cause);
        } finally {
            inFlight[f] = null;
        }
    }

    /** Waits for every running outer all-reduce (their results stay pending until their step): before a checkpoint. */
    void awaitInFlight() {
        for (int f = 0; f < inFlight.length; f++) {
            await(f);
        }
    }

    private void apply(int f) {
        float lr = (float) config.outerLearningRate();
        float mu = (float) config.outerMomentum();
        for (int p = plan.firstTensor(f); p < plan.endTensor(f); p++) {
            MemorySegment w = params.get(p);
            long base = tensorOffset[p];
            long n = w.byteSize() / Float.BYTES;
            for (long i = 0; i < n; i++) {
                float g = pseudo.getAtIndex(F32, base + i);
                float m = mu * momentum.getAtIndex(F32, base + i) + g;
                momentum.setAtIndex(F32, base + i, m);
                float updated = global.getAtIndex(F32, base + i) - lr * (g + mu * m);
                global.setAtIndex(F32, base + i, updated);
                w.setAtIndex(F32, i, updated);
            }
        }
        applyAt.setAtIndex(I64, f, -1);
    }

    /** CRC32C of the global parameters: the same on every rank of every data center at every step. */
    long globalChecksum() {
        CRC32C crc = new CRC32C();
        crc.update(global.asByteBuffer());
        return crc.getValue();
    }

    /** Copy of the global parameters in flat order. */
    float[] globalSnapshot() {
        return global.toArray(F32);
    }

    /** The outer state a checkpoint holds, in {@link #CHECKPOINT_NAMES} order (call {@link #awaitInFlight} first). */
    List<MemorySegment> checkpointSections() {
        return List.of(global, momentum, pseudo, applyAt);
    }

    /** Sizes of {@link #checkpointSections()} in 4-byte units, as the checkpoint header lists them. */
    long[] checkpointSizes() {
        return new long[]{global.byteSize() / 4, momentum.byteSize() / 4, pseudo.byteSize() / 4, applyAt.byteSize() / 4};
    }

    @Override
    public void close() {
        if (outerThread != null) {
            outerThread.shutdownNow();
            try {
                if (!outerThread.awaitTermination(10, TimeUnit.SECONDS)) {
                    // An all-reduce that ignores the interrupt still writes into pseudo: leaking the buffers beats
                    // freeing memory under it.
                    return;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        arena.close();
    }
}
