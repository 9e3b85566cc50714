package io.xaforward.training;

/**
 * Linear warmup to the peak rate, then cosine decay to the minimum rate at {@code totalSteps}; constant after.
 * A pure function of the step, so a resumed run continues on the same curve.
 */
public record LearningRateSchedule(double peak, double min, long warmupSteps, long totalSteps) {

    public LearningRateSchedule {
        if (peak < 0 || min < 0 || min > peak || warmupSteps < 0 || totalSteps < 0) {
            throw new IllegalArgumentException("bad schedule: peak " + peak + " min " + min + " warmup "
                    + warmupSteps + " total " + totalSteps);
        }
    }

    /** Rate for 0-based {@code step}. */
    public double at(long step) {
        if (step < warmupSteps) {
            return peak * (step + 1) / warmupSteps;
        }
        if (step >= totalSteps) {
            return min;
        }
        long decaySteps = Math.max(1, totalSteps - warmupSteps);
        double progress = (double) (step - warmupSteps) / decaySteps;
        return min + 0.5 * (1 + Math.cos(Math.PI * progress)) * (peak - min);
    }
}
