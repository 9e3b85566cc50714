package io.xaforward.cluster;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A trainer that does not all-reduce its loss (the bench's DDP over Gloo) reports each rank's as {@code local_loss};
 * the step's loss is then the ranks' mean, what XAF's ranks report, all-reduced, as {@code loss}.
 */
class LocalLossCombineTest {

    private static WorkerLine line(String lossKey, String loss, String ms) {
        return WorkerLine.parse(WorkerLine.format("step", "step", 3, lossKey, loss, "ms", ms, "compute_ms", "100.00",
                "comm_ms", "50.00", "tok_s", "200.0"));
    }

    @Test
    void ranksLocalLossesAreAveraged() {
        TrainResult.Step s = TrainingJob.combine(3, Map.of(0, line("local_loss", "5.0", "150.00"),
                1, line("local_loss", "6.0", "170.00")));
        assertEquals(5.5, s.loss(), 1e-12);
        assertEquals(170.0, s.stepMs(), 1e-12, "the slowest rank's step");
    }

    @Test
    void anAllReducedLossIsTakenAsIs() {
        TrainResult.Step s = TrainingJob.combine(3, Map.of(0, line("loss", "5.25", "150.00"),
                1, line("loss", "5.25", "170.00")));
        assertEquals(5.25, s.loss(), 1e-12);
    }
}
