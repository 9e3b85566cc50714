package io.xaforward.cluster;

import io.xaforward.training.Evaluation;

import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * What a distributed training run produced: one record per step (losses are the mean over ranks, identical on
 * every rank; times are the slowest rank's), and the totals the summary table shows.
 */
public record TrainResult(TrainJobSpec spec, int worldSize, List<Step> steps, double wallSeconds,
                          Map<String, Long> gatewayCounters, long finalChecksum, long parameterCount) {

    /** @param validation the validation loss evaluated after this step, or null */
    public record Step(long step, double loss, Evaluation validation, double stepMs, double computeMs,
                       double commMs, double tokensPerSecond) {

        public double validationLoss() {
            return validation == null ? Double.NaN : validation.loss();
        }
    }

    public double finalLoss() {
        return steps.isEmpty() ? Double.NaN : steps.getLast().loss();
    }

    /** The last evaluation of the run, or null when it evaluated none. */
    public Evaluation lastValidation() {
        for (int i = steps.size() - 1; i >= 0; i--) {
            if (steps.get(i).validation() != null) return steps.get(i).validation();
        }
        return null;
    }

    public double lastValidationLoss() {
        Evaluation last = lastValidation();
        return last == null ? Double.NaN : last.loss();
    }

    /** Median step time, skipping the first step (warm-up: JIT, first allocation of buckets). */
    public double medianStepMs() {
        return median(steps.stream().skip(steps.size() > 1 ? 1 : 0).mapToDouble(Step::stepMs).toArray());
    }

    public double meanComputeMs() {
        return steps.stream().skip(steps.size() > 1 ? 1 : 0).mapToDouble(Step::computeMs).average().orElse(Double.NaN);
    }

    public double meanCommMs() {
        return steps.stream().skip(steps.size() > 1 ? 1 : 0).mapToDouble(Step::commMs).average().orElse(Double.NaN);
    }

    /** Sum of step times: the training time proper, without start-up and teardown. */
    public double trainingSeconds() {
        return steps.stream().mapToDouble(Step::stepMs).sum() / 1000;
    }

    public static double median(double[] v) {
        if (v.length == 0) return Double.NaN;
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }
}
