package io.xaforward.cluster;

import java.io.PrintStream;
import java.util.Locale;

/**
 * One console view of a distributed run: a progress bar with step, loss, tokens/s and the compute/communication
 * split, redrawn in place on a terminal and printed as plain lines (every few steps) when the output is a file.
 */
public final class ProgressView {
    private final PrintStream out;
    private final long totalSteps;
    private final boolean terminal;
    private final long printEvery;
    private long lastPrinted = -1;

    public ProgressView(PrintStream out, long totalSteps) {
        this.out = out;
        this.totalSteps = totalSteps;
        this.terminal = System.console() != null && System.getenv("XAF_PLAIN") == null;
        this.printEvery = Math.max(1, totalSteps / 20);
    }

    /** Shows the state after {@code step} steps completed on every rank. */
    public void update(long step, double loss, double tokensPerSecond, double computeMs, double commMs, double stepMs) {
        if (!terminal && step != totalSteps && step - lastPrinted < printEvery && lastPrinted >= 0) return;
        lastPrinted = step;
        int width = 24;
        int filled = (int) Math.round(width * (double) step / Math.max(1, totalSteps));
        double total = computeMs + commMs;
        String line = String.format(Locale.ROOT, "step %4d/%d [%s%s] loss %.4f | %,.0f tok/s | compute %2.0f%% comm %2.0f%% | %.0f ms/step",
                step, totalSteps, "#".repeat(filled), "-".repeat(width - filled), loss, tokensPerSecond,
                total > 0 ? 100 * computeMs / total : 0, total > 0 ? 100 * commMs / total : 0, stepMs);
        if (terminal) {
            out.print("\r" + line);
            if (step == totalSteps) out.println();
        } else {
            out.println(line);
        }
        out.flush();
    }

    /** A message on its own line (keeps the bar intact on a terminal). */
    public void message(String text) {
        if (terminal && lastPrinted >= 0 && lastPrinted != totalSteps) out.println();
        out.println(text);
        out.flush();
    }
}
