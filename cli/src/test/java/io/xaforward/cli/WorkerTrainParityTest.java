package io.xaforward.cli;

import io.xaforward.cluster.TrainJobCodec;
import io.xaforward.cluster.deploy.WorkerOptions;
import io.xaforward.collective.WireDtype;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * xaf worker and xaf train fill the same trainer and collective parts from the same options: the ones xaf worker
 * used to lack (--overlap, --wire-dtype, --eval-every, --eval-windows, --pacing-mbps) reach its parts, and every
 * shared option may come from a training section.
 */
class WorkerTrainParityTest {
    @TempDir
    Path dir;

    @Test
    void everySharedTrainingOptionIsASettingOfATrainingSection() {
        Set<String> shared = new TreeSet<>();
        for (Object options : List.of(new TrainingLoopOptions(), new CollectiveOptions())) {
            for (var o : new CommandLine(options).getCommandSpec().options()) shared.add(o.longestName().substring(2));
        }
        assertTrue(shared.containsAll(Set.of("overlap", "wire-dtype", "eval-every", "eval-windows", "pacing-mbps",
                "grad-clip")), shared.toString());
        Set<String> missing = new TreeSet<>(shared);
        missing.removeAll(TrainJobCodec.SECTION_KEYS);
        assertEquals(Set.of(), missing, "shared options the training section codec does not know");
    }

    @Test
    void xafWorkerTakesTheOptionsXafTrainHas() throws Exception {
        Path cluster = dir.resolve("cluster.yaml");
        Files.writeString(cluster, SampleClusterFiles.ONE_DC_TWO_RANKS);
        WorkerCommand w = new WorkerCommand();
        w.environment = Map.of("RANK", "0");
        new CommandLine(w).parseArgs("--token", "7", "--data", dir.resolve("corpus.txt").toString(), "--checkpoint-dir",
                dir.resolve("ckpt").toString(), "--wire-security", "crc32c", "--interface", "eth1", "--cluster",
                cluster.toString(), "--overlap", "off", "--wire-dtype", "bf16", "--eval-every", "5", "--eval-windows", "7",
                "--pacing-mbps", "100");
        WorkerOptions o = w.options(w.identity());
        assertFalse(o.trainer().overlap());
        assertEquals(5, o.trainer().evalEvery());
        assertEquals(7, o.trainer().evalWindows());
        assertEquals(WireDtype.BF16, o.join().collective().wireDtype());
        assertEquals(100_000_000 / 8, o.join().collective().pacingBytesPerSecond());
    }
}
