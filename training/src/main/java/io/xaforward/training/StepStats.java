package io.xaforward.training;

/**
 * What one training step did and cost.
 *
 * @param step                0-based index of the step just completed
 * @param loss                mean training loss over the global batch (all ranks)
 * @param localLoss           this rank's micro-batch loss
 * @param learningRate        rate used by the optimizer
 * @param gradNorm            global L2 norm of the averaged gradient before clipping
 * @param computeMillis       forward, backward and gathering gradients into the flat buffer (with overlap this
 *                            includes the all-reduces that ran meanwhile on the communication thread)
 * @param communicationMillis time spent inside {@link GradientReducer#allReduceMean}; with overlap, only the time
 *                            waited for it after backward ended (the communication not hidden by backward)
 * @param optimizerMillis     clipping and the AdamW update over the flat buffer
 * @param tokensPerSecond     global-batch tokens divided by the step's wall time
 * @param validation          validation loss after this step with its standard error, or null when not evaluated
 * @param outer               what DiLoCo's outer loop did after this step ({@link Outer#NONE} under plain data
 *                            parallelism and between syncs)
 */
public record StepStats(long step, float loss, float localLoss, double learningRate, double gradNorm,
                        double computeMillis, double communicationMillis, double optimizerMillis,
                        double tokensPerSecond, Evaluation validation, Outer outer) {

    /** A step without an outer sync. */
    public StepStats(long step, float loss, float localLoss, double learningRate, double gradNorm,
                     double computeMillis, double communicationMillis, double optimizerMillis,
                     double tokensPerSecond, Evaluation validation) {
        this(step, loss, localLoss, learningRate, gradNorm, computeMillis, communicationMillis, optimizerMillis,
                tokensPerSecond, validation, Outer.NONE);
    }

    /**
     * DiLoCo's outer loop after one step.
     *
     * @param started       fragments whose outer all-reduce started after this step
     * @param applied       fragments whose averaged pseudo-gradient was applied after this step
     * @param appliedFloats pseudo-gradient values applied (each all-reduced across the data centers)
     * @param waitedMillis  time the training thread waited for outer all-reduces (included in communicationMillis)
     */
    public record Outer(int started, int applied, long appliedFloats, double waitedMillis) {
        public static final Outer NONE = new Outer(0, 0, 0, 0);

        public boolean synced() {
            return started > 0 || applied > 0;
        }
    }

    public boolean hasValidationLoss() {
        return validation != null;
    }

    /** The validation loss after this step, or NaN when not evaluated. */
    public double validationLoss() {
        return validation == null ? Double.NaN : validation.loss();
    }
}
