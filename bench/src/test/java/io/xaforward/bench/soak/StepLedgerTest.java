package io.xaforward.bench.soak;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.function.LongFunction;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The soak's accounting of every rank's steps, and its comparison with a fault-free reference: histories with a lost
 * step, a repeated step, a resume from a step never completed, and a contribution counted twice on every rank (the
 * ranks still agree with each other) must each fail; a history with restarts and recomputed steps must add up.
 */
class StepLedgerTest {
    private static final int WORLD = 4;

    /** The weights' checksum of a healthy run after {@code step}: any function of the step serves. */
    private static String sum(long step) {
        return Long.toHexString(step * 0x9E3779B97F4A7C15L);
    }

    private static String loss(long step) {
        return String.format("%.6f", 5.0 / (1 + step));
    }

    /** Every rank runs from {@code from} through {@code to}, checksums by {@code checksum}. */
    private static void run(StepLedger ledger, long from, long to, LongFunction<String> checksum) {
        for (int r = 0; r < WORLD; r++) ledger.start(r, from);
        for (long s = from + 1; s <= to; s++) {
            for (int r = 0; r < WORLD; r++) ledger.step(r, s, loss(s), checksum.apply(s));
        }
    }

    private static StepLedger reference(long to) {
        StepLedger ref = new StepLedger(WORLD);
        run(ref, 0, to, StepLedgerTest::sum);
        return ref;
    }

    @Test
    void restartsWithRecomputedStepsAddUpAndMatchTheReference() {
        StepLedger soak = new StepLedger(WORLD);
        run(soak, 0, 12, StepLedgerTest::sum);   // killed after step 12, checkpoint at 10
        run(soak, 10, 15, StepLedgerTest::sum);  // killed after 15 before its checkpoint of 15 was taken
        run(soak, 10, 22, StepLedgerTest::sum);  // past the target: the soak stops it late
        StepLedger.Accounting a = soak.account(20);
        assertTrue(a.complete(), a.problems().toString());
        assertEquals(20, a.stepsAgreed());
        for (StepLedger.RankAccount r : a.ranks()) {
            assertEquals(3, r.runs());
            assertEquals(20, r.kept());
            assertEquals(12 + 5 + 10, r.reported());
            assertEquals(7, r.recomputed(), "steps 11-12 once, 11-15 again");
        }
        StepLedger.Comparison c = soak.compare(reference(25), 20);
        assertTrue(c.finalEqual(), c.toString());
        assertEquals(20, c.stepsEqual());
        assertTrue(c.differences().isEmpty(), c.differences().toString());
    }

    /** Every rank applied one contribution twice at step 13: they agree with each other, not with the reference. */
    @Test
    void aContributionCountedTwiceOnEveryRankFailsOnlyAgainstTheReference() {
        StepLedger soak = new StepLedger(WORLD);
        run(soak, 0, 20, s -> s < 13 ? sum(s) : sum(s + 1000));
        StepLedger.Accounting a = soak.account(20);
        assertTrue(a.complete(), "the ranks agree with each other: " + a.problems());
        StepLedger.Comparison c = soak.compare(reference(20), 20);
        assertFalse(c.finalEqual());
        assertEquals(12, c.stepsEqual());
        assertTrue(c.differences().getFirst().startsWith("step 13:"), c.differences().toString());
    }

    @Test
    void aStepOneRankSkippedAfterARestartIsFound() {
        StepLedger soak = new StepLedger(WORLD);
        run(soak, 0, 12, StepLedgerTest::sum);
        for (int r = 0; r < WORLD; r++) soak.start(r, 10);
        for (long s = 11; s <= 20; s++) {
            for (int r = 0; r < WORLD; r++) {
                if (r == 2 && s == 14) continue; // rank 2 never reports step 14
                soak.step(r, s, loss(s), sum(s));
            }
        }
        StepLedger.Accounting a = soak.account(20);
        assertFalse(a.complete());
        assertTrue(a.problems().stream().anyMatch(p -> p.startsWith("rank 2 run 2") && p.contains("step 15 where step 14 was due (skipped)")),
                a.problems().toString());
        assertTrue(a.problems().stream().anyMatch(p -> p.contains("step 14 missing")), a.problems().toString());
        assertTrue(a.stepsAgreed() < 20);
    }

    @Test
    void aStepOneRankRepeatedIsFound() {
        StepLedger soak = new StepLedger(WORLD);
        run(soak, 0, 9, StepLedgerTest::sum);
        for (int r = 0; r < WORLD; r++) soak.step(r, 10, loss(10), sum(10));
        soak.step(1, 10, loss(10), sum(10)); // rank 1 applied step 10 twice within one run
        StepLedger.Accounting a = soak.account(10);
        assertFalse(a.complete());
        assertTrue(a.problems().stream().anyMatch(p -> p.startsWith("rank 1 run 1") && p.contains("(repeated)")),
                a.problems().toString());
    }

    @Test
    void aResumeFromAStepNoRunCompletedIsFound() {
        StepLedger soak = new StepLedger(WORLD);
        run(soak, 0, 12, StepLedgerTest::sum);
        run(soak, 15, 20, StepLedgerTest::sum); // steps 13-15 were never computed
        StepLedger.Accounting a = soak.account(20);
        assertFalse(a.complete());
        assertTrue(a.problems().stream().anyMatch(p -> p.contains("resumed from step 15, which no earlier run")),
                a.problems().toString());
    }

    @Test
    void ranksThatDisagreeAtAStepAreFound() {
        StepLedger soak = new StepLedger(WORLD);
        for (int r = 0; r < WORLD; r++) soak.start(r, 0);
        for (long s = 1; s <= 5; s++) {
            for (int r = 0; r < WORLD; r++) soak.step(r, s, loss(s), r == 3 && s == 4 ? "bad" : sum(s));
        }
        StepLedger.Accounting a = soak.account(5);
        assertFalse(a.complete());
        assertTrue(a.problems().stream().anyMatch(p -> p.startsWith("step 4: rank 3 run 1")), a.problems().toString());
    }

    @Test
    void aRankThatNeverReachedTheTargetIsFound() {
        StepLedger soak = new StepLedger(WORLD);
        run(soak, 0, 8, StepLedgerTest::sum);
        soak.step(0, 9, loss(9), sum(9));
        StepLedger.Accounting a = soak.account(9);
        assertFalse(a.complete());
        assertEquals(List.of(1, 2, 3), a.problems().stream().filter(p -> p.contains("step 9 missing"))
                .map(p -> Integer.parseInt(p.substring(5, 6))).toList(), a.problems().toString());
    }
}
