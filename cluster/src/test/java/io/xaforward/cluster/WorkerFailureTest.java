package io.xaforward.cluster;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.*;

/** A failed worker reaches the user as one line: rank, exit status, the reason from its log, and the log's path. */
class WorkerFailureTest {

    @Test
    void theReasonIsTheWorkersLastXafLineAndTheLogIsNamed() {
        String log = """
                12:00:01 ERROR WorkerMain - rank 2 failed
                java.lang.IllegalStateException: wrapper
                \tat io.xaforward.cluster.WorkerMain.run(WorkerMain.java:60)
                Caused by: java.io.IOException: checkpoint /r/model.ckpt is truncated
                \tat io.xaforward.training.CheckpointFile.readHeader(CheckpointFile.java:117)
                \t... 3 more
                xaf: checkpoint /r/model.ckpt is truncated
                """;
        String line = TrainingJob.workerFailed(2, 1, log, Path.of("/tmp/xaf-train-1/worker-2.log"));
        assertEquals("worker rank 2 failed (exit 1): checkpoint /r/model.ckpt is truncated"
                + " (its log: /tmp/xaf-train-1/worker-2.log)", line);
        assertFalse(line.contains("\n"));
    }

    @Test
    void withoutAnXafLineTheLastExceptionLineIsTheReason() {
        String log = """
                java.lang.IllegalStateException: wrapper
                \tat a.B.c(B.java:1)
                Caused by: java.lang.OutOfMemoryError: Java heap space
                \tat a.B.d(B.java:2)
                """;
        assertEquals("Caused by: java.lang.OutOfMemoryError: Java heap space", TrainingJob.lastError(log));
        assertEquals("killed", TrainingJob.lastError("starting\nkilled\n"));
        assertEquals("no output", TrainingJob.lastError(""));
        assertEquals("worker rank 1 failed (killed by signal 9): no output (its log: w/worker-1.log)",
                TrainingJob.workerFailed(1, 137, "", Path.of("w/worker-1.log")));
    }
}
