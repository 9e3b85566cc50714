package io.xaforward.testbed;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What the emulated WAN does to frames besides rate and queue: a one-way delay with jitter, random or bursty loss,
 * and reordering, applied by the WAN namespace's delay line ({@code io.xaforward.testbed.wan.DelayLine}) to each
 * direction independently. {@link #NONE} (no field given) means no delay line: the WAN is a bridge, as before.
 *
 * @param delayNanos  one-way delay added in each direction
 * @param jitterNanos each frame's delay is drawn uniformly from {@code delay ± jitter} (at most {@code delay}); a
 *                    frame never leaves before the one received before it, so jitter alone does not reorder
 * @param loss        probability that a frame is dropped, independently of every other frame (0..1)
 * @param burst       Gilbert-Elliott burst loss instead of {@code loss}; null when not given
 * @param reorder     probability that a frame skips the delay queue and leaves at once, ahead of the frames
 *                    still held (netem's {@code reorder}); 0..1
 */
public record WanImpairment(long delayNanos, long jitterNanos, double loss, BurstLoss burst, double reorder) {
    /** No impairment: the WAN bridges and shapes only. */
    public static final WanImpairment NONE = new WanImpairment(0, 0, 0, null, 0);

    /**
     * Gilbert-Elliott loss: a two-state chain per direction, moved once per frame. In the good state a frame gets
     * through with probability {@code k}, in the bad state with probability {@code h}; {@code p} is the chance of
     * going from good to bad, {@code r} from bad to good (so bursts last 1/r frames on average). With the defaults
     * h = 0 and k = 1 this is the simple Gilbert model: every frame in a burst is lost, none outside one. The long-run
     * loss is {@code (p (1-h) + r (1-k)) / (p + r)}.
     */
    public record BurstLoss(double p, double r, double h, double k) {
        /** The long-run fraction of frames lost. */
        public double meanLoss() {
            return (p * (1 - h) + r * (1 - k)) / (p + r);
        }
    }

    /** Whether any impairment is set, i.e. whether the WAN needs the delay line. */
    public boolean any() {
        return delayNanos > 0 || jitterNanos > 0 || loss > 0 || burst != null || reorder > 0;
    }

    /** The delay line's command-line arguments for these settings (its parser reads exactly these). */
    public List<String> delayLineArguments() {
        List<String> a = new ArrayList<>(List.of("--delay-ns", Long.toString(delayNanos), "--jitter-ns", Long.toString(jitterNanos),
                "--loss", Double.toString(loss), "--reorder", Double.toString(reorder)));
        if (burst != null)
            a.addAll(List.of("--burst", String.format(Locale.ROOT, "%s,%s,%s,%s", burst.p, burst.r, burst.h, burst.k)));
        return a;
    }
}
