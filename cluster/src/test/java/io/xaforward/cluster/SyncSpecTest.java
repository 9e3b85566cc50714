package io.xaforward.cluster;

import io.xaforward.collective.Algorithm;
import io.xaforward.collective.OuterDtype;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.training.DilocoConfig;
import io.xaforward.training.TrainerConfig;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The synchronisation settings of a job: their words, their checks, the job file, the data centers' checkpoints. */
class SyncSpecTest {
    private static TrainJobSpec.Builder spec(Path dir) {
        return TrainJobSpec.builder().topology(dir.resolve("t.yaml")).prefix("t9b").gatewayMode(GatewayMode.XDP)
                .algorithm(Algorithm.HIERARCHICAL).preset("tiny").steps(12).globalBatch(8).seed(3).learningRate(2e-3)
                .data(dir.resolve("corpus.txt")).jobId(2).jobToken(5).threadsPerWorker(1).bucketBytes(1 << 20)
                .workDir(dir);
    }

    @Test
    void aDilocoSpecSurvivesItsJobFileAndDdpIsTheDefault() throws Exception {
        Path dir = Files.createTempDirectory("xaf-sync-spec").toAbsolutePath();
        TrainJobSpec plain = spec(dir).build();
        assertEquals(SyncMode.DDP, plain.sync());
        assertEquals(OuterDtype.FP32, plain.collective().outerDtype());
        Path file = dir.resolve("job.properties");
        TrainJobCodec.write(plain, file);
        assertEquals(plain, TrainJobCodec.read(file));

        TrainJobSpec diloco = spec(dir).diloco(new DilocoConfig(8, 2, 3, 0.5, 0.8))
                .outerDtype(OuterDtype.BF16).build();
        TrainJobCodec.write(diloco, file);
        assertEquals(diloco, TrainJobCodec.read(file));
        assertEquals(diloco, diloco.toBuilder().build());
    }

    @Test
    void wordsAndChecks() {
        assertEquals(SyncMode.DILOCO, SyncMode.fromName(" DiLoCo "));
        assertEquals(OuterDtype.BF16, OuterDtype.fromName("bfloat16"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> SyncMode.fromName("fsdp")).getMessage()
                .contains("unknown sync mode 'fsdp'"));
        Path dir = Path.of("/tmp");
        // The mode is the trainer's outer loop: a job has one exactly when it is diloco.
        assertEquals(SyncMode.DILOCO, spec(dir).diloco(DilocoConfig.of(4)).build().sync());
        assertEquals(SyncMode.DDP, spec(dir).diloco(DilocoConfig.of(4)).diloco(null).build().sync());
        assertEquals(OuterDtype.INT4, spec(dir).diloco(DilocoConfig.of(4)).outerDtype(OuterDtype.INT4)
                .build().collective().outerDtype(), "the quantized outer formats are taken");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> spec(dir)
                .diloco(new DilocoConfig(4, 3, 0, 0.7, 0.9)).build()).getMessage().contains("2 layers"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> TrainJobSpec.checkDatacenters(SyncMode.DILOCO, 1))
                .getMessage().contains("at least two data centers"));
        TrainJobSpec.checkDatacenters(SyncMode.DDP, 1);
    }

    /**
     * The builder holds the trainer part whole: a preset set after the trainer keeps every other trainer setting,
     * the ones the job's flat setters never had (gradient clipping, weight decay, the minimum learning rate) too.
     */
    @Test
    void changingThePresetKeepsTheTrainersOtherSettings() {
        TrainerConfig trainer = TrainerConfig.builder("tiny").steps(12).globalBatch(8).gradClipNorm(0.25)
                .weightDecay(0.02).minLearningRate(5e-5).build();
        TrainJobSpec spec = spec(Path.of("/tmp")).trainer(trainer).preset("gpt2-tiny").build();
        assertEquals("gpt2-tiny", spec.trainer().preset());
        assertEquals(0.25, spec.trainer().gradClipNorm(), "grad-clip kept");
        assertEquals(0.02, spec.trainer().weightDecay(), "weight decay kept");
        assertEquals(5e-5, spec.trainer().minLearningRate(), "minimum learning rate kept");
        assertEquals(12, spec.trainer().steps());
    }

    @Test
    void eachDataCenterHasItsOwnCheckpointBesideTheFirst() {
        Path first = Path.of("/runs/x/checkpoints/step-000300.ckpt");
        assertEquals(first, CheckpointNames.forDatacenter(first, 0));
        assertEquals(Path.of("/runs/x/checkpoints/step-000300-dc2.ckpt"), CheckpointNames.forDatacenter(first, 2));
        assertEquals(Path.of("model-dc1"), CheckpointNames.forDatacenter(Path.of("model"), 1));
    }
}
