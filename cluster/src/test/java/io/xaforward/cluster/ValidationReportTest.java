package io.xaforward.cluster;

import io.xaforward.collective.Algorithm;
import io.xaforward.testbed.mode.GatewayMode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.xaforward.training.Evaluation;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

/**
 * A validation figure travels from a worker's step line to the launcher's step record and the result table with its
 * standard error and what it was averaged over.
 */
class ValidationReportTest {

    private static WorkerLine stepLine(Evaluation validation) {
        String line = WorkerLine.format("step", "step", 20, "loss", "6.400000", "ms", "1200.00", "compute_ms", "500.00",
                "comm_ms", "700.00", "tok_s", "850.0", "lr", "0.01", "sent_bytes", 1000, "retransmits", 0);
        if (validation != null) line += " " + WorkerLine.validationValues(validation);
        return WorkerLine.parse(line);
    }

    private static TrainJobSpec spec() {
        return TrainJobSpec.builder().topology(Path.of("topologies/two-dc.yaml")).prefix("t123")
                .gatewayMode(GatewayMode.XDP).algorithm(Algorithm.HIERARCHICAL).preset("gpt2-tiny").steps(20)
                .globalBatch(16).seed(1234).learningRate(1e-2).warmupSteps(2).evalEvery(10).checksumEvery(5)
                .data(Path.of("data")).jobId(1).jobToken(7).threadsPerWorker(1).bucketBytes(4 << 20)
                .workDir(Path.of("/tmp/work")).evalWindows(1024).build();
    }

    @Test
    void stepLinesCarryTheEstimateAndItsStandardError() {
        Evaluation whole = new Evaluation(6.508123, 0.022345, 389, 389);
        TrainResult.Step step = TrainingJob.combine(20, Map.of(0, stepLine(whole), 1, stepLine(whole)));
        assertEquals(whole, step.validation());
        assertEquals(6.508123, step.validationLoss());

        TrainResult.Step without = TrainingJob.combine(19, Map.of(0, stepLine(null), 1, stepLine(null)));
        assertNull(without.validation());
        assertTrue(Double.isNaN(without.validationLoss()));
    }

    @Test
    void theResultTableShowsTheLastEstimateWithWhatWasAveraged() {
        Evaluation early = new Evaluation(7.1, 0.03, 389, 389);
        Evaluation whole = new Evaluation(6.508123, 0.022345, 389, 389);
        TrainResult result = new TrainResult(spec(), 4, List.of(
                new TrainResult.Step(10, 7.0, early, 1200, 500, 700, 850),
                new TrainResult.Step(20, 6.4, whole, 1200, 500, 700, 850),
                new TrainResult.Step(21, 6.3, null, 1200, 500, 700, 850)),
                300, Map.of(), 0xabcL, 1_000_000);
        String table = SummaryTable.render(result);
        assertTrue(table.matches("(?s).*\\| validation loss +\\| 6\\.5081 ± 0\\.0223 \\(standard error\\) +\\|.*"), table);
        assertTrue(table.contains("the whole validation split (389 windows of 64 tokens)"), table);

        Evaluation sampled = new Evaluation(6.5, 0.014, 1024, 3891);
        TrainResult large = new TrainResult(spec(), 4, List.of(new TrainResult.Step(20, 6.4, sampled, 1200, 500, 700,
                850)), 300, Map.of(), 0xabcL, 1_000_000);
        assertTrue(SummaryTable.render(large).contains("1,024 of the validation split's 3,891 windows of 64 tokens"),
                SummaryTable.render(large));

        TrainResult none = new TrainResult(spec(), 4, List.of(new TrainResult.Step(20, 6.4, null, 1200, 500, 700,
                850)), 300, Map.of(), 0xabcL, 1_000_000);
        assertTrue(!SummaryTable.render(none).contains("validation loss"), SummaryTable.render(none));
    }
}
