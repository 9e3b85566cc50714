package io.xaforward.training;

import java.util.Locale;

/**
 * One validation-loss estimate: the mean next-token loss over {@code windows} windows of the validation split, and
 * its standard error, the sample standard deviation of the per-window losses divided by sqrt(windows). The standard
 * error treats the windows as a sample of text like the split's, so it says how far the figure may be from the
 * model's loss on such text, also when the whole split was evaluated.
 *
 * @param loss          mean cross-entropy (nats per token) over the evaluated windows
 * @param standardError standard error of {@code loss}; NaN for a single window
 * @param windows       windows evaluated (over all ranks)
 * @param splitWindows  non-overlapping windows the validation split holds; equal to {@code windows} when the whole
 *                      split was evaluated
 */
public record Evaluation(double loss, double standardError, long windows, long splitWindows) {

    /**
     * From the sum and sum of squares of {@code count} per-window losses. The sums of a few thousand losses of a few
     * nats carry ~16 digits in a double, so the usual one-pass variance loses nothing that matters here.
     */
    public static Evaluation of(double sum, double sumOfSquares, long count, long splitWindows) {
        if (count <= 0) {
            throw new IllegalArgumentException("an evaluation needs at least one window, got " + count);
        }
        double mean = sum / count;
        double standardError = Double.NaN;
        if (count > 1) {
            double variance = Math.max(0, (sumOfSquares - sum * mean) / (count - 1));
            standardError = Math.sqrt(variance / count);
        }
        return new Evaluation(mean, standardError, count, splitWindows);
    }

    public boolean wholeSplit() {
        return windows == splitWindows;
    }

    /** "6.5081 ± 0.0223" (loss ± standard error, nats). */
    public String figure() {
        return String.format(Locale.ROOT, "%.4f ± %.4f", loss, standardError);
    }

    /**
     * What was averaged, for people: "the whole validation split (389 windows of 64 tokens)" or "1,024 of the
     * validation split's 3,891 windows of 64 tokens".
     */
    public String coverage(int contextLength) {
        return wholeSplit()
                ? String.format(Locale.ROOT, "the whole validation split (%,d windows of %d tokens)", windows,
                        contextLength)
                : String.format(Locale.ROOT, "%,d of the validation split's %,d windows of %d tokens", windows,
                        splitWindows, contextLength);
    }
}
