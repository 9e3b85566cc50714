package io.xaforward.testkit.fuzz;

import io.xaforward.dataplane.Counter;
import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The CI-sized run of the fuzzer behind {@code xaf bench fuzz}: mutated, truncated, padded and random frames of all
 * nine form pairs, jumbo frames among them (multi-buffer in the XDP program), through the XDP program
 * (BPF_PROG_TEST_RUN, root as in CI) and through the Java reference
 * decision used by the relay and AF_XDP engines. Every frame must get the same outcome, action and output bytes
 * from both, and the program must count every frame under exactly one outcome.
 */
class DecisionFuzzTest {
    static final int FRAMES = 50_000;

    @Test
    void fuzzedFramesGetTheSameOutcomeFromEveryEngine() {
        DecisionFuzzer.Report r = DecisionFuzzer.run(FRAMES, 7, null);
        assertEquals(0, r.disagreements(), () -> "disagreements between the Java reference and the XDP program:\n"
                + String.join("\n", r.firstDisagreements()));
        assertArrayEquals(r.referenceOutcomes(), r.xdpCounterDeltas(), () -> "XDP counters " + Arrays.toString(r.xdpCounterDeltas())
                + " vs reference outcomes " + Arrays.toString(r.referenceOutcomes()));
        assertEquals(r.droppedFrames(), r.dropCounterSum(), "every dropped frame counted once");
        assertEquals(r.referenceXafFrames(), r.portRxPackets(), "every XAF frame counted on the port it arrived on");
        assertEquals(r.referenceOutcomes()[Counter.FORWARDED.ordinal()], r.portTxPackets(), "every forwarded frame counted on its egress port");
        assertEquals(r.forwardedBytesCompared(), r.portTxBytes(), "egress bytes per port = the forwarded frames' lengths");
        assertEquals(r.referenceOutcomes()[Counter.DROP_TOO_BIG.ordinal()], r.portTxTooBig(), "every too-big frame counted on its egress port");
        assertTrue(r.clean());
        for (Counter c : new Counter[] {Counter.PASS_NON_XAF, Counter.FORWARDED, Counter.DROP_MALFORMED, Counter.DROP_NO_ROUTE,
                Counter.DROP_BAD_TOKEN, Counter.DROP_HOP_LIMIT, Counter.DROP_INGRESS, Counter.DROP_HAIRPIN, Counter.DROP_TOO_BIG}) {
            assertTrue(r.referenceOutcomes()[c.ordinal()] > 100, () -> "outcome " + c + " exercised: " + Arrays.toString(r.referenceOutcomes()));
        }
        assertTrue(r.forwardedBytesCompared() > 0, "forwarded frames compared byte for byte");
        long forwarded = r.referenceOutcomes()[Counter.FORWARDED.ordinal()];
        // jumbo frames among them (multi-buffer in the program): without them the average would stay under 1.6 kB
        assertTrue(r.forwardedBytesCompared() > 2500L * forwarded, () -> "average forwarded frame "
                + r.forwardedBytesCompared() / Math.max(1, forwarded) + " bytes: jumbo frames exercised");
        for (FuzzFrames.Kind k : FuzzFrames.Kind.values()) assertTrue(r.framesByKind().get(k) > 0, "frames of kind " + k);
        // the routes' source-port spans (2 or more ports each for the IP forms) were compared, not only their first port
        assertTrue(r.forwardedSourcePorts() >= 4, () -> "distinct egress source ports compared: " + r.forwardedSourcePorts());
    }
}
