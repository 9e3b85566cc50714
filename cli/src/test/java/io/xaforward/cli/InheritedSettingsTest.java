package io.xaforward.cli;

import io.xaforward.cluster.rendezvous.EtcdRendezvous;
import io.xaforward.common.EtcdClient;
import io.xaforward.common.LocalEtcd;
import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.GradientReducer;
import io.xaforward.training.SyntheticCorpus;
import io.xaforward.training.TextDataset;
import io.xaforward.training.TokenDataset;
import io.xaforward.training.TrainerConfig;
import io.xaforward.transport.JobSecret;
import io.xaforward.transport.WireSecurity;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Settings a run takes from outside its command line (a cluster file's training section, etcd's
 * /xaf/jobs/JOB/training, a checkpoint's recorded settings under xaf train --resume) never lower its wire security,
 * are validated, keep data inside the allowed roots, and are reported with their source.
 */
class InheritedSettingsTest {
    @TempDir
    static Path dir;
    static Path data, secret, outside;
    static LocalEtcd etcd;
    static EtcdClient client;

    @BeforeAll
    static void setUp() throws Exception {
        data = Files.createDirectories(dir.resolve("data"));
        Files.writeString(data.resolve("corpus.txt"), SyntheticCorpus.generate(1, 20_000));
        outside = Files.createDirectories(dir.resolve("elsewhere"));
        Files.writeString(outside.resolve("private.txt"), "not training data");
        secret = dir.resolve("job.secret");
        JobSecret.generate().writeTo(secret);
        etcd = LocalEtcd.start();
        client = new EtcdClient(etcd.clientUrl(), Duration.ofSeconds(5));
    }

    @AfterAll
    static void tearDown() throws Exception {
        if (client != null) client.close();
        if (etcd != null) {
            etcd.close();
            assertFalse(etcd.isAlive(), "etcd left running");
        }
    }

    /** A worker of the cluster file holding {@code training}, its command line {@code extra}; its report goes to {@code log}. */
    static WorkerCommand clusterWorker(String training, ByteArrayOutputStream log, String... extra) throws Exception {
        Path cluster = Files.createTempFile(dir, "cluster", ".yaml");
        Files.writeString(cluster, SampleClusterFiles.ONE_DC_TWO_RANKS + "training: " + training + "\n");
        List<String> args = new ArrayList<>(List.of("--token", "0x1234", "--checkpoint-dir", dir.resolve("ckpt").toString(),
                "--interface", "eth1", "--cluster", cluster.toString(), "--secret-file", secret.toString(),
                "--data-root", data.toString()));
        args.addAll(List.of(extra));
        WorkerCommand w = new WorkerCommand();
        w.environment = Map.of("RANK", "1");
        w.log = new PrintStream(log, true, StandardCharsets.UTF_8);
        new CommandLine(w).parseArgs(args.toArray(String[]::new));
        return w;
    }

    static Path clusterOf(WorkerCommand w) {
        return w.join.peers.cluster;
    }

    static WorkerCommand etcdWorker(String training, ByteArrayOutputStream log, String... extra) {
        client.put(EtcdRendezvous.trainingKey(7), training, 0);
        List<String> args = new ArrayList<>(List.of("--token", "0x1234", "--checkpoint-dir", dir.resolve("ckpt").toString(),
                "--interface", "eth1", "--etcd", etcd.clientUrl().toString(), "--job", "7", "--form", "ipv4",
                "--secret-file", secret.toString(), "--data-root", data.toString()));
        args.addAll(List.of(extra));
        WorkerCommand w = new WorkerCommand();
        w.environment = Map.of("RANK", "1", "WORLD_SIZE", "2");
        w.log = new PrintStream(log, true, StandardCharsets.UTF_8);
        new CommandLine(w).parseArgs(args.toArray(String[]::new));
        return w;
    }

    static final String ETCD_SOURCE = "etcd " + "%s" + EtcdRendezvous.trainingKey(7);

    @Test
    void crc32cFromTheClusterFileIsRefusedForAMacWorker() throws Exception {
        WorkerCommand w = clusterWorker("{wire-security: crc32c, steps: 9}", new ByteArrayOutputStream());
        var e = assertThrows(IllegalArgumentException.class, w::applyClusterTraining);
        assertEquals(clusterOf(w) + ": training.wire-security crc32c is weaker than this process's mac (its command line"
                + " or default); refused: a setting from outside never lowers the wire security. To run with crc32c, give"
                + " --wire-security crc32c on the command line", e.getMessage());
        assertEquals(WireSecurity.MAC, w.join.wireSecurity, "nothing was applied");
        assertEquals(300, w.loop.steps, "nothing was applied, not even the valid steps");

        WorkerCommand encryptWorker = clusterWorker("{wire-security: mac}", new ByteArrayOutputStream(), "--wire-security", "encrypt");
        encryptWorker.applyClusterTraining();
        assertEquals(WireSecurity.ENCRYPT, encryptWorker.join.wireSecurity, "given on the command line: the file's mac is not used");
    }

    @Test
    void crc32cFromEtcdIsRefusedForAMacWorker() {
        WorkerCommand w = etcdWorker("{wire-security: crc32c}", new ByteArrayOutputStream());
        var e = assertThrows(IllegalArgumentException.class, w::applyEtcdTraining);
        assertTrue(e.getMessage().startsWith(ETCD_SOURCE.formatted(etcd.clientUrl())
                + ": training.wire-security crc32c is weaker than this process's mac"), e.getMessage());
        assertEquals(WireSecurity.MAC, w.join.wireSecurity);

        WorkerCommand asked = etcdWorker("{wire-security: crc32c}", new ByteArrayOutputStream(), "--wire-security", "crc32c");
        asked.applyEtcdTraining();
        assertEquals(WireSecurity.CRC32C, asked.join.wireSecurity, "a worker that asks for crc32c itself runs with it");
    }

    @Test
    void crc32cRecordedInACheckpointIsRefusedOnResume() throws Exception {
        Path checkpoint = checkpoint("""
                {"command": "xaf train", "version": "0", "options": {"--wire-security": "crc32c", "--steps": "6"}}""");
        TrainCommand t = resumed(checkpoint, new ByteArrayOutputStream());
        var e = assertThrows(IllegalArgumentException.class, t::inheritSettings);
        assertTrue(e.getMessage().startsWith("checkpoint " + checkpoint + " (its recorded settings): --wire-security crc32c"
                + " is weaker than this process's mac"), e.getMessage());
        assertEquals(WireSecurity.MAC, t.wireSecurity);
    }

    @Test
    void aStrongerModeIsTakenAndEverySettingIsReportedWithItsSource() throws Exception {
        ByteArrayOutputStream clusterLog = new ByteArrayOutputStream();
        WorkerCommand w = clusterWorker("{wire-security: encrypt, lr: 0.01, data: " + data.resolve("corpus.txt") + "}", clusterLog);
        w.applyClusterTraining();
        assertEquals(WireSecurity.ENCRYPT, w.join.wireSecurity);
        assertEquals(0.01, w.loop.lr);
        String source = clusterOf(w).toString();
        assertEquals(List.of("xaf worker: --wire-security encrypt from " + source,
                        "xaf worker: --data " + data.resolve("corpus.txt") + " from " + source,
                        "xaf worker: --lr 0.01 from " + source),
                sorted(clusterLog, List.of("--wire-security", "--data", "--lr")));

        ByteArrayOutputStream etcdLog = new ByteArrayOutputStream();
        WorkerCommand e = etcdWorker("{wire-security: encrypt, steps: 11}", etcdLog);
        e.applyEtcdTraining();
        assertEquals(WireSecurity.ENCRYPT, e.join.wireSecurity);
        assertEquals(11, e.loop.steps);
        String etcdSource = ETCD_SOURCE.formatted(etcd.clientUrl());
        assertTrue(etcdLog.toString(StandardCharsets.UTF_8).contains("xaf worker: --steps 11 from " + etcdSource + "\n"), etcdLog.toString());
        assertTrue(etcdLog.toString(StandardCharsets.UTF_8).contains("xaf worker: --wire-security encrypt from " + etcdSource + "\n"));

        Path checkpoint = checkpoint("""
                {"command": "xaf train", "version": "0", "options": {"--wire-security": "encrypt", "--steps": "6", "--lr": "0.002"}}""");
        ByteArrayOutputStream trainLog = new ByteArrayOutputStream();
        TrainCommand t = resumed(checkpoint, trainLog);
        t.inheritSettings();
        assertEquals(WireSecurity.ENCRYPT, t.wireSecurity);
        assertEquals(0.002, t.loop.lr);
        String line = trainLog.toString(StandardCharsets.UTF_8);
        assertTrue(line.startsWith("xaf: settings of the resumed run from " + checkpoint + ": ") && line.contains("--wire-security encrypt")
                && line.contains("--lr 0.002"), line);
    }

    /** The report's lines for {@code options}, in that order (the report follows the option table's order). */
    private static List<String> sorted(ByteArrayOutputStream log, List<String> options) {
        List<String> lines = log.toString(StandardCharsets.UTF_8).lines().toList();
        assertEquals(options.size(), lines.size(), lines.toString());
        return options.stream().map(o -> lines.stream().filter(l -> l.startsWith("xaf worker: " + o + " ")).findFirst()
                .orElseThrow(() -> new AssertionError(o + " not reported: " + lines))).toList();
    }

    @Test
    void aLearningRateThatIsNotFiniteAndPositiveIsRefused() throws Exception {
        for (String lr : List.of("0", "-0.001", "NaN", "Infinity")) {
            WorkerCommand w = clusterWorker("{lr: \"" + lr + "\"}", new ByteArrayOutputStream());
            var e = assertThrows(IllegalArgumentException.class, w::applyClusterTraining, lr);
            assertTrue(e.getMessage().startsWith(clusterOf(w) + ": training.lr ")
                    && e.getMessage().endsWith(" is not a learning rate: it must be a finite number above 0"), e.getMessage());
            assertEquals(3e-3, w.loop.lr, "the default stays");
        }
        WorkerCommand fromEtcd = etcdWorker("{lr: \"NaN\"}", new ByteArrayOutputStream());
        var e = assertThrows(IllegalArgumentException.class, fromEtcd::applyEtcdTraining);
        assertTrue(e.getMessage().startsWith(ETCD_SOURCE.formatted(etcd.clientUrl()) + ": training.lr NaN"), e.getMessage());

        Path checkpoint = checkpoint("""
                {"command": "xaf train", "version": "0", "options": {"--lr": "-1"}}""");
        var c = assertThrows(IllegalArgumentException.class, resumed(checkpoint, new ByteArrayOutputStream())::inheritSettings);
        assertTrue(c.getMessage().contains("--lr -1.0 is not a learning rate"), c.getMessage());

        for (String bad : List.of("{steps: 0}", "{batch: 0}", "{warmup: -1}")) {
            WorkerCommand w = clusterWorker(bad, new ByteArrayOutputStream());
            var b = assertThrows(IllegalArgumentException.class, w::applyClusterTraining, bad);
            assertTrue(b.getMessage().contains(": training."), b.getMessage());
        }
    }

    @Test
    void aDataPathOutsideTheDataRootsIsRefused() throws Exception {
        WorkerCommand w = clusterWorker("{data: " + outside.resolve("private.txt") + "}", new ByteArrayOutputStream());
        var e = assertThrows(IllegalArgumentException.class, w::applyClusterTraining);
        assertEquals(clusterOf(w) + ": training.data " + outside.resolve("private.txt") + " is outside the data roots this"
                + " process allows (" + data + "); refused: give --data on the command line, or --data-root DIR for a"
                + " directory that holds it", e.getMessage());
        assertNull(w.data);

        // A link inside the root that leads outside it is judged by where it leads; so is a climb out with '..'.
        Path link = data.resolve("link.txt");
        if (!Files.exists(link, java.nio.file.LinkOption.NOFOLLOW_LINKS)) Files.createSymbolicLink(link, outside.resolve("private.txt"));
        assertThrows(IllegalArgumentException.class,
                clusterWorker("{data: " + link + "}", new ByteArrayOutputStream())::applyClusterTraining);
        assertThrows(IllegalArgumentException.class,
                clusterWorker("{data: " + data + "/../elsewhere/private.txt}", new ByteArrayOutputStream())::applyClusterTraining);

        WorkerCommand fromEtcd = etcdWorker("{data: /etc/passwd}", new ByteArrayOutputStream());
        var ee = assertThrows(IllegalArgumentException.class, fromEtcd::applyEtcdTraining);
        assertTrue(ee.getMessage().startsWith(ETCD_SOURCE.formatted(etcd.clientUrl()) + ": training.data /etc/passwd is outside"),
                ee.getMessage());

        Path checkpoint = checkpoint("""
                {"command": "xaf train", "version": "0", "options": {"--data": "/etc/passwd"}}""");
        TrainCommand t = resumed(checkpoint, new ByteArrayOutputStream(), "--data-root", data.toString());
        var c = assertThrows(IllegalArgumentException.class, t::inheritSettings);
        assertTrue(c.getMessage().contains("--data /etc/passwd is outside the data roots"), c.getMessage());

        WorkerCommand given = clusterWorker("{steps: 3}", new ByteArrayOutputStream(), "--data", outside.resolve("private.txt").toString());
        given.applyClusterTraining();
        assertEquals(outside.resolve("private.txt"), given.data, "--data on the command line is the operator's own choice");
    }

    /** A checkpoint of the tiny preset carrying {@code settings} as its recorded run settings. */
    static Path checkpoint(String settings) throws Exception {
        Path file = Files.createTempFile(dir, "resume", ".ckpt");
        TokenDataset.Split split = TextDataset.open(data.resolve("corpus.txt")).split(0.1);
        TrainerConfig config = TrainerConfig.builder("tiny").steps(1).globalBatch(2).seed(4).build();
        try (DataParallelTrainer t = new DataParallelTrainer(config, split.train(), null, 0, 1, GradientReducer.single())) {
            t.recordSettings(settings);
            t.saveCheckpoint(file);
        }
        return file;
    }

    static TrainCommand resumed(Path checkpoint, ByteArrayOutputStream log, String... extra) {
        TrainCommand t = new TrainCommand();
        t.log = new PrintStream(log, true, StandardCharsets.UTF_8);
        List<String> args = new ArrayList<>(List.of("--resume", checkpoint.toString()));
        args.addAll(List.of(extra));
        CommandLine cl = new CommandLine(t);
        cl.registerConverter(Path.class, UserPaths::resolve);
        cl.parseArgs(args.toArray(String[]::new));
        return t;
    }
}
