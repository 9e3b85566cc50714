package io.xaforward.cluster;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The names of every checkpoint file, as docs/DATA.md ("Checkpoint files") lists them. */
class CheckpointNamesTest {

    @Test
    void xafTrainNamesTheJobsCheckpointsAndItsDataCentersSiblings() {
        Path work = Path.of("/runs/w");
        Path dir = CheckpointNames.jobDirectory(work);
        assertEquals(Path.of("/runs/w/checkpoints"), dir);
        assertEquals(Path.of("/runs/w/checkpoints/step-000300.ckpt"), CheckpointNames.step(dir, 300));
        assertEquals(Path.of("/runs/w/checkpoints/step-1234567.ckpt"), CheckpointNames.step(dir, 1_234_567));
        assertEquals(Path.of("/runs/w/checkpoints/step-000300-dc1.ckpt"),
                CheckpointNames.forDatacenter(CheckpointNames.step(dir, 300), 1));
        assertEquals(Path.of("/runs/w/model.ckpt"), CheckpointNames.jobFinal(work));
        assertEquals("model.ckpt", CheckpointNames.JOB_FINAL);
    }

    @Test
    void xafWorkerNamesEachRanksOwnCheckpoints() {
        Path dir = Path.of("/var/lib/xaf/job7");
        assertEquals(Path.of("/var/lib/xaf/job7/step-000100-rank2.ckpt"), CheckpointNames.rankStep(dir, 2, 100));
        assertEquals(Path.of("/var/lib/xaf/job7/model-rank2.ckpt"), CheckpointNames.rankFinal(dir, 2));
    }

    @Test
    void aRanksStepsAreThoseOfItsOwnFilesUnderEitherName(@TempDir Path dir) throws IOException {
        assertEquals(Set.of(), CheckpointNames.rankSteps(dir.resolve("missing"), 1), "no directory: no steps");
        for (String name : new String[] {
                "step-000002-rank1.ckpt", "step-000004-rank1.ckpt",
                "ckpt-rank1-step000006.bin",                         // written by an earlier version
                "step-000008-rank0.ckpt", "ckpt-rank0-step000010.bin", // another rank's (a shared volume)
                "step-12-rank1.ckpt", "step-000014-rank01.ckpt",     // not names this scheme writes
                "step-000016-rank1.ckpt.tmp", "model-rank1.ckpt", "config-rank1.json",
                "step-99999999999999999999-rank1.ckpt"}) {           // too long for a step: not a checkpoint
            Files.writeString(dir.resolve(name), "x");
        }
        assertEquals(Set.of(2L, 4L, 6L), CheckpointNames.rankSteps(dir, 1));
        assertEquals(Set.of(8L, 10L), CheckpointNames.rankSteps(dir, 0));
        assertEquals(Set.of(), CheckpointNames.rankSteps(dir, 3));
    }

    @Test
    void aWorkersSettingsSitBesideItsCheckpointsAndNameTheRanksThatRanThere(@TempDir Path dir) throws IOException {
        assertEquals(dir.resolve("config-rank2.json"), CheckpointNames.rankSettings(dir, 2));
        assertEquals(Set.of(), CheckpointNames.ranksWithSettings(dir.resolve("missing")), "no directory: no ranks");
        for (String name : new String[] {"config-rank2.json", "config-rank0.json", "step-000002-rank5.ckpt",
                "config-rank02.json", "config-rank3.json.tmp", "config.json"}) {   // the last three: not its names
            Files.writeString(dir.resolve(name), "{}");
        }
        assertEquals(Set.of(0, 2), CheckpointNames.ranksWithSettings(dir));
    }

    @Test
    void aResumedRankReadsTheCurrentNameElseTheEarlierOne(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("ckpt-rank1-step000006.bin"), "old");
        assertEquals(dir.resolve("ckpt-rank1-step000006.bin"), CheckpointNames.rankStepToRead(dir, 1, 6));
        Files.writeString(dir.resolve("step-000006-rank1.ckpt"), "new");
        assertEquals(dir.resolve("step-000006-rank1.ckpt"), CheckpointNames.rankStepToRead(dir, 1, 6),
                "the file this version wrote wins");
        assertEquals(dir.resolve("step-000008-rank1.ckpt"), CheckpointNames.rankStepToRead(dir, 1, 8),
                "neither there: the current name, which the trainer reports as missing");
    }
}
