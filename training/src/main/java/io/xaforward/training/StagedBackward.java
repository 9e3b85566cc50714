package io.xaforward.training;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.jni.JniUtils;
import ai.djl.training.ParameterStore;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Communication overlapped with backward. Forward runs with the graph cut at every stage boundary (embedding, each
 * block, head): each stage's input is a detached leaf that requires a gradient. Backward then runs stage by stage
 * from the loss down; as soon as the stages behind a suffix of the flat buffer are done, that suffix is gathered and
 * handed to the communication thread, whose all-reduce runs while the main thread continues with the earlier
 * stages' backward.
 */
final class StagedBackward implements Backward {
    private final NDManager manager;
    private final GptModel network;
    private final ParameterStore store;
    private final FlatGradients gradients;
    private final GradientReducer reducer;
    private final int rank;
    /** For backward stage s: the first parameter of the flat-order suffix that is final once stage s is done. */
    private final int[] readyFrom;
    private final ExecutorService communication;
    private final List<Future<Double>> pendingReductions = new ArrayList<>();
    /** The first parameter whose reduction has been submitted this step (parameterCount: none yet). */
    private int issuedFrom;

    StagedBackward(NDManager manager, GptModel network, ParameterStore store, FlatGradients gradients,
                   GradientReducer reducer, List<Parameter> parameters, int rank) {
        this.manager = manager;
        this.network = network;
        this.store = store;
        this.gradients = gradients;
        this.reducer = reducer;
        this.rank = rank;
        this.readyFrom = readySuffixes(network.stageParameters(), parameters);
        this.communication = Executors.newSingleThreadExecutor(r -> {
            Thread thread = new Thread(r, "gradient-allreduce-rank" + rank);
            thread.setDaemon(true);
            return thread;
        });
    }

    /**
     * For backward stage s (0 = embedding .. last = head; backward runs them last to first), the first parameter of
     * the longest suffix of the flat order whose parameters all belong to stages >= s, i.e. whose gradients are
     * final once stage s's backward is done. A parameter used by several stages (a tied head) counts as belonging to
     * the earliest one.
     */
    static int[] readySuffixes(List<List<Parameter>> stages, List<Parameter> ordered) {
        Map<Parameter, Integer> stageOf = new IdentityHashMap<>();
        for (int s = 0; s < stages.size(); s++) {
            for (Parameter parameter : stages.get(s)) {
                stageOf.putIfAbsent(parameter, s);
            }
        }
        if (stageOf.size() != ordered.size() || !stageOf.keySet().containsAll(ordered)) {
            throw new IllegalStateException("model stages cover " + stageOf.size() + " parameters, the flat order "
                    + ordered.size());
        }
        int[] from = new int[stages.size()];
        for (int s = 0; s < stages.size(); s++) {
            int p = ordered.size();
            while (p > 0 && stageOf.get(ordered.get(p - 1)) >= s) {
                p--;
            }
            from[s] = p;
        }
        return from;
    }

    @Override
    public float forwardBackward(Batch batch) {
        try (NDManager stepManager = manager.newSubManager()) {
            NDArray[] tensors = Backward.inputsAndTargets(stepManager, batch);
            NDArray inputs = tensors[0], targets = tensors[1];
            int blocks = network.blockCount();
            NDArray[] stageOutputs = new NDArray[blocks + 1];
            NDArray[] stageInputs = new NDArray[blocks + 2];
            boolean previousGradMode = JniUtils.isGradMode();
            JniUtils.setGradMode(true);
            try {
                NDArray x = network.embed(store, inputs, true);
                stageOutputs[0] = x;
                for (int i = 0; i < blocks; i++) {
                    stageInputs[i + 1] = detachedLeaf(x, stepManager);
                    x = network.block(store, i, stageInputs[i + 1], true);
                    stageOutputs[i + 1] = x;
                }
                stageInputs[blocks + 1] = detachedLeaf(x, stepManager);
                NDArray lossArray = GptModel.crossEntropy(network.head(store, stageInputs[blocks + 1], true), targets);
                float loss = lossArray.getFloat();
                gradients.loss(loss);
                issuedFrom = gradients.parameterCount();
                NDArray seed = stepManager.ones(new Shape(), DataType.FLOAT32);
                JniUtils.backward((PtNDArray) lossArray, (PtNDArray) seed, false, false);
                issueReadySuffix(blocks + 1);
                for (int s = blocks; s >= 0; s--) {
                    NDArray upstream = stageInputs[s + 1].getGradient();
                    upstream.attach(stepManager);
                    JniUtils.backward((PtNDArray) stageOutputs[s], (PtNDArray) upstream, false, false);
                    issueReadySuffix(s);
                }
                return loss;
            } finally {
                JniUtils.setGradMode(previousGradMode);
            }
        }
    }

    /** A leaf sharing {@code x}'s storage, cut from its graph, whose gradient backward will fill. */
    private static NDArray detachedLeaf(NDArray x, NDManager owner) {
        NDArray leaf = x.stopGradient();
        leaf.attach(owner);
        leaf.setRequiresGradient(true);
        return leaf;
    }

    /**
     * After the backward of stage {@code stage}: gathers the parameters from {@link #readyFrom}[stage] up to the
     * last issued one and submits their all-reduce (the first submission of a step also carries the loss float).
     */
    private void issueReadySuffix(int stage) {
        int from = readyFrom[stage];
        if (from >= issuedFrom) {
            return;
        }
        gradients.gather(from, issuedFrom);
        long first = gradients.offset(from);
        long last = issuedFrom == gradients.parameterCount() ? gradients.floats() + 1 : gradients.offset(issuedFrom);
        long gradientEnd = Math.min(last, gradients.floats());
        issuedFrom = from;
        pendingReductions.add(communication.submit(() -> {
            reducer.allReduceMean(gradients.flat().asSlice(first * Float.BYTES), Math.toIntExact(last - first));
            return gradients.sumOfSquares(first, gradientEnd);
        }));
    }

    /** Waits for this step's reductions in submission order; returns the sum of squares of the mean gradient. */
    @Override
    public double meanGradient() {
        if (issuedFrom != 0) {
            throw new IllegalStateException("backward left parameters " + 0 + ".." + issuedFrom + " unreduced");
        }
        double sumSquares = 0;
        RuntimeException failure = null;
        for (Future<Double> pending : pendingReductions) {
            try {
                sumSquares += pending.get();
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                if (failure == null) {
                    failure = cause instanceof RuntimeException r ? r
                            : new IllegalStateException("gradient all-reduce failed", cause);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for the gradient all-reduce", e);
            }
        }
        pendingReductions.clear();
        if (failure != null) {
            throw failure;
        }
        return sumSquares;
    }

    /** Stops the communication thread; it writes into the flat buffer, so it must be gone before that is freed. */
    @Override
    public void close() {
        communication.shutdownNow();
        try {
            if (!communication.awaitTermination(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("gradient all-reduce thread of rank " + rank + " did not stop");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
