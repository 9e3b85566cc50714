package io.xaforward.bench.fuzz;

import io.xaforward.bench.Machine;
import io.xaforward.dataplane.Counter;
import io.xaforward.testkit.fuzz.DecisionFuzzer;
import io.xaforward.testkit.fuzz.FuzzFrames;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * {@code xaf bench fuzz}: millions of generated frames through the XDP program (BPF_PROG_TEST_RUN) against the Java
 * reference decision, via {@link DecisionFuzzer} (the CI test DecisionFuzzTest runs the same code on fewer frames).
 * Writes OUT/fuzz.md with the outcome table and the count checks, and says whether the run was clean.
 */
public final class FuzzBench {
    private FuzzBench() {}

    /** Runs the fuzzer and writes {@code out}/fuzz.md; the report says whether it was clean. */
    public static DecisionFuzzer.Report run(long frames, long seed, Path out, String command, PrintStream log) throws IOException {
        DecisionFuzzer.Report r = DecisionFuzzer.run(frames, seed, log);
        String md = markdown(r, command);
        Files.createDirectories(out);
        Files.writeString(out.resolve("fuzz.md"), md);
        log.print(md);
        return r;
    }

    static String markdown(DecisionFuzzer.Report r, String command) {
        StringBuilder md = new StringBuilder("# Fuzzing the gateway decision: XDP program vs Java reference\n\n");
        md.append(String.format(Locale.ROOT, "Command: `%s`. Machine: %s.%n%n", command, Machine.describe()));
        md.append("Every frame runs once through the compiled XDP program (BPF_PROG_TEST_RUN) and once through the Java "
                + "reference (FrameParser, ForwardingDecision, the AF_XDP/relay rewrite). A frame agrees when the program "
                + "moved exactly the reference's outcome counter (and RX_XAF exactly for XAF frames), returned the matching "
                + "action, left passed frames untouched and emitted byte-identical forwarded frames. Frames are mutations of "
                + "valid frames of all nine ingress/egress form pairs (payloads 0 to 8941 bytes: jumbo frames, multi-buffer in the program, around the 9000-byte egress MTU): bit flips, header byte "
                + "writes, targeted field values, truncation at every byte from the end of Ethernet to the end of the XAF "
                + "header, padding, and random bytes behind each EtherType.\n\n");
        md.append(String.format(Locale.ROOT, "| frames | seed | seconds | frames/s | disagreements | dropped frames | sum of drop counters | forwarded bytes compared | clean |%n"));
        md.append("|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
        md.append(String.format(Locale.ROOT, "| %,d | %d | %.1f | %,.0f | %,d | %,d | %,d | %,d | %s |%n%n", r.frames(), r.seed(),
                r.seconds(), r.framesPerSecond(), r.disagreements(), r.droppedFrames(), r.dropCounterSum(),
                r.forwardedBytesCompared(), r.clean() ? "yes" : "NO"));
        md.append(String.format(Locale.ROOT, "Per-port counters: %,d XAF frames received on the fuzz port (reference: %,d), %,d frames and "
                + "%,d bytes forwarded out of the egress slot (reference: %,d and %,d).%n%n", r.portRxPackets(), r.referenceXafFrames(),
                r.portTxPackets(), r.portTxBytes(), r.referenceOutcomes()[Counter.FORWARDED.ordinal()], r.forwardedBytesCompared()));
        md.append("| outcome | Java reference | XDP counter delta |\n|---|---:|---:|\n");
        for (Counter c : Counter.values()) {
            if (c == Counter.RX_XAF) continue;
            long ref = r.referenceOutcomes()[c.ordinal()], xdp = r.xdpCounterDeltas()[c.ordinal()];
            if (ref == 0 && xdp == 0) continue;
            md.append(String.format(Locale.ROOT, "| %s | %,d | %,d |%n", c.name().toLowerCase(Locale.ROOT), ref, xdp));
        }
        md.append("\n| frame kind | frames |\n|---|---:|\n");
        for (FuzzFrames.Kind k : FuzzFrames.Kind.values()) {
            md.append(String.format(Locale.ROOT, "| %s | %,d |%n", k.name().toLowerCase(Locale.ROOT), r.framesByKind().get(k)));
        }
        if (!r.firstDisagreements().isEmpty()) {
            md.append("\nFirst disagreements:\n\n```\n").append(String.join("\n", r.firstDisagreements())).append("\n```\n");
        }
        return md.toString();
    }
}
