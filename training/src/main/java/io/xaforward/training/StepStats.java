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
 */
public record StepStats(long step, float loss, float localLoss, double learningRate, double gradNorm,
                        double computeMillis, double communicationMillis, double optimizerMillis,
                        double tokensPerSecond, Evaluation validation) {

    public boolean hasValidationLoss() {
        return validation != null;
    }

    /** The validation loss after this step, or NaN when not evaluated. */
    public double validationLoss() {
        return validation == null ? Double.NaN : validation.loss();
    }
}
