package io.xaforward.cluster;

import io.xaforward.collective.Algorithm;
import io.xaforward.collective.OuterDtype;
import io.xaforward.collective.WireDtype;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.transport.WireSecurity;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The one codec of a job's settings: job.properties under its old keys, and the training sections. */
class TrainJobCodecTest {
    /** A job file as the first versions wrote it: none of the keys added since (evalWindows, sync, outerDtype, ...). */
    private static final String OLD_JOB_FILE = """
            #XAForward training job
            topology=/x/two-dc.yaml
            prefix=t1ab
            gatewayMode=xdp
            jobId=1
            jobToken=77
            endpoint=udp
            workDir=/x/work
            algorithm=hierarchical
            preset=tiny
            steps=12
            globalBatch=8
            seed=3
            learningRate=0.002
            warmupSteps=2
            evalEvery=4
            checksumEvery=5
            data=/x/corpus.txt
            threadsPerWorker=1
            bucketBytes=1048576
            pacingBytesPerSecond=0
            rateLimit=none
            """;

    @Test
    void aJobFileOfAnOlderVersionStillReadsWithTheDefaultsOfWhatItLacks() throws Exception {
        Path file = Files.createTempDirectory("xaf-codec").resolve("job.properties");
        Files.writeString(file, OLD_JOB_FILE);
        TrainJobSpec spec = TrainJobCodec.read(file);
        assertEquals(GatewayMode.XDP, spec.cluster().gatewayMode());
        assertEquals(77, spec.cluster().jobToken());
        assertEquals("tiny", spec.trainer().preset());
        assertEquals(12, spec.trainer().steps());
        assertEquals(8, spec.trainer().globalBatch());
        assertEquals(0.002, spec.trainer().learningRate());
        assertEquals(1, spec.trainer().threads());
        assertTrue(spec.trainer().overlap(), "overlap was on before it was an option");
        assertEquals(0, spec.trainer().checkpointEvery());
        assertEquals(1.0, spec.trainer().gradClipNorm(), "clipped at norm 1 before it was an option");
        assertNull(spec.resume());
        assertEquals(SyncMode.DDP, spec.sync());
        assertEquals(new CollectiveSettings(Algorithm.HIERARCHICAL, 1 << 20, WireDtype.FP32, 0, OuterDtype.FP32),
                spec.collective());
        assertEquals(WireSecurity.MAC, spec.wireSecurity(), "the default wire security");
        assertEquals(Path.of("/x/corpus.txt"), spec.data());
        assertEquals(java.time.Duration.ofSeconds(120), spec.opTimeout(), "every worker waited 120 s before it was an option");
    }

    @Test
    void itWritesTheKeysItAlwaysWrote() throws Exception {
        Path dir = Files.createTempDirectory("xaf-codec").toAbsolutePath();
        Path file = dir.resolve("job.properties");
        Files.writeString(file, OLD_JOB_FILE);
        TrainJobSpec spec = TrainJobCodec.read(file);
        TrainJobCodec.write(spec, file);
        Properties p = JobProperties.read(file);
        Set<String> keys = new TreeSet<>(p.stringPropertyNames());
        assertEquals(new TreeSet<>(Set.of("topology", "prefix", "gatewayMode", "jobId", "jobToken", "endpoint", "workDir",
                "algorithm", "preset", "steps", "globalBatch", "seed", "learningRate", "warmupSteps", "evalEvery",
                "checksumEvery", "data", "threadsPerWorker", "bucketBytes", "pacingBytesPerSecond", "rateLimit",
                "checkpointEvery", "overlap", "wireDtype", "wireSecurity", "evalWindows", "sync", "outerDtype",
                "gradClipNorm", "opTimeoutSeconds")), keys);
        assertEquals("0.002", p.getProperty("learningRate"));
        assertEquals(spec, TrainJobCodec.read(file));

        TrainJobSpec clipped = spec.toBuilder().trainer(spec.trainer().toBuilder().gradClipNorm(0.25).build()).build();
        assertEquals(0.25, clipped.trainer().gradClipNorm(), "the builder keeps what the job file carries beside its setters");
        TrainJobCodec.write(clipped, file);
        assertEquals("0.25", JobProperties.read(file).getProperty("gradClipNorm"));
        assertEquals(clipped, TrainJobCodec.read(file));
    }

    @Test
    void aTrainingSectionTakesOnlyJobSettingsAndSurvivesItsOwnText() {
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put("preset", "tiny");
        settings.put("steps", "9");
        settings.put("lr", "0.02");
        settings.put("wire-security", "encrypt");
        String text = TrainJobCodec.writeSection(settings);
        assertEquals("{preset: tiny, steps: 9, lr: 0.02, wire-security: encrypt}", text);
        Object yaml = io.xaforward.common.YamlTree.read(text, IllegalArgumentException::new);
        assertEquals(settings, TrainJobCodec.readSection(yaml, "training", IllegalArgumentException::new));

        var e = assertThrows(IllegalArgumentException.class, () -> TrainJobCodec.readSection(
                Map.of("presets", "tiny"), "training", IllegalArgumentException::new));
        assertTrue(e.getMessage().startsWith("training.presets is not a job setting (allowed: algorithm, batch,"),
                e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> TrainJobCodec.writeSection(Map.of("rank", "1")));
        assertFalse(TrainJobCodec.SECTION_KEYS.contains("rank"), "who a rank is is never a job setting");
    }
}
