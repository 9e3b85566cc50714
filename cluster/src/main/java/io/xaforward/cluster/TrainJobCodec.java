package io.xaforward.cluster;

import io.xaforward.collective.Algorithm;
import io.xaforward.collective.OuterDtype;
import io.xaforward.collective.WireDtype;
import io.xaforward.training.DilocoConfig;
import io.xaforward.training.TrainerConfig;
import io.xaforward.transport.WireSecurity;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * The one codec of a training job's settings, in each of its text forms:
 *
 * <ul>
 *   <li>job.properties, which {@code xaf train} writes for its worker processes ({@link #write}, {@link #read}): the
 *       parts of a {@link TrainJobSpec} under the keys they have always had (camelCase field names; the cluster's
 *       through {@link ClusterRun.Spec#writeTo}, which the all-reduce job file shares), words as on the command
 *       line;</li>
 *   <li>the training settings of {@code xaf worker}: a cluster file's {@code training:} section and the YAML mapping
 *       etcd keeps at {@code /xaf/jobs/JOB/training} ({@link #readSection}, {@link #writeSection}), keyed by the
 *       option names of xaf worker without their dashes ({@link #SECTION_KEYS}).</li>
 * </ul>
 *
 * A new setting of the trainer or collective parts is added here, once, for every form.
 */
public final class TrainJobCodec {
    private TrainJobCodec() {}

    /**
     * The settings a training section may give, as xaf worker's options without their dashes: the training options
     * that xaf train, xaf worker and xaf launch share, and the job settings of xaf worker.
     */
    public static final Set<String> SECTION_KEYS = Set.of(
            // the trainer part
            "preset", "tokenizer", "steps", "batch", "seed", "lr", "warmup", "grad-clip", "threads", "checksum-every",
            "eval-every", "eval-windows", "overlap",
            "sync", "sync-every", "fragments", "fragment-sync-delay", "outer-lr", "outer-momentum",
            // the collective part
            "algorithm", "bucket-mb", "wire-dtype", "pacing-mbps", "outer-dtype",
            // the job's own
            "data", "checkpoint-every", "wire-security", "op-timeout", "start-timeout");

    /** Writes {@code spec} as a worker's job.properties. */
    public static void write(TrainJobSpec spec, Path file) throws IOException {
        Properties p = new Properties();
        spec.cluster().writeTo(p);
        var t = spec.trainer();
        var c = spec.collective();
        p.setProperty("algorithm", c.algorithm().configName());
        p.setProperty("preset", t.preset());
        p.setProperty("steps", Long.toString(t.steps()));
        p.setProperty("globalBatch", Integer.toString(t.globalBatch()));
        p.setProperty("seed", Long.toString(t.seed()));
        p.setProperty("learningRate", Double.toString(t.learningRate()));
        p.setProperty("warmupSteps", Long.toString(t.warmupSteps()));
        p.setProperty("gradClipNorm", Double.toString(t.gradClipNorm()));
        p.setProperty("evalEvery", Long.toString(t.evalEvery()));
        p.setProperty("checksumEvery", Long.toString(spec.checksumEvery()));
        p.setProperty("data", spec.data().toAbsolutePath().toString());
        p.setProperty("threadsPerWorker", Integer.toString(t.threads()));
        p.setProperty("bucketBytes", Long.toString(c.bucketBytes()));
        p.setProperty("pacingBytesPerSecond", Long.toString(c.pacingBytesPerSecond()));
        p.setProperty("rateLimit", spec.rateLimit());
        p.setProperty("opTimeoutSeconds", Long.toString(spec.opTimeout().toSeconds()));
        p.setProperty("checkpointEvery", Long.toString(t.checkpointEvery()));
        if (spec.resume() != null) p.setProperty("resume", spec.resume().toAbsolutePath().toString());
        p.setProperty("overlap", Boolean.toString(t.overlap()));
        p.setProperty("wireDtype", c.wireDtype().configName());
        p.setProperty("wireSecurity", spec.wireSecurity().configName());
        p.setProperty("evalWindows", Integer.toString(t.evalWindows()));
        p.setProperty("sync", spec.sync().configName());
        p.setProperty("outerDtype", c.outerDtype().configName());
        DilocoConfig diloco = t.diloco();
        if (diloco != null) {
            p.setProperty("syncEvery", Integer.toString(diloco.syncEvery()));
            p.setProperty("fragments", Integer.toString(diloco.fragments()));
            p.setProperty("fragmentSyncDelay", Integer.toString(diloco.fragmentSyncDelay()));
            p.setProperty("outerLr", Double.toString(diloco.outerLearningRate()));
            p.setProperty("outerMomentum", Double.toString(diloco.outerMomentum()));
        }
        JobProperties.write(p, file, "XAForward training job");
    }

    /** What {@link #write} wrote; keys added since the first version have their old defaults when absent. */
    public static TrainJobSpec read(Path file) throws IOException {
        Properties p = JobProperties.read(file);
        ClusterRun.Spec cluster = ClusterRun.Spec.readFrom(p);
        SyncMode sync = SyncMode.fromName(p.getProperty("sync", SyncMode.DDP.configName()));
        DilocoConfig diloco = sync != SyncMode.DILOCO ? null : new DilocoConfig(Integer.parseInt(p.getProperty("syncEvery")),
                Integer.parseInt(p.getProperty("fragments")), Integer.parseInt(p.getProperty("fragmentSyncDelay")),
                Double.parseDouble(p.getProperty("outerLr")), Double.parseDouble(p.getProperty("outerMomentum")));
        long checkpointEvery = Long.parseLong(p.getProperty("checkpointEvery", "0"));
        TrainerConfig.Builder trainer = TrainerConfig.builder(p.getProperty("preset"))
                .steps(Long.parseLong(p.getProperty("steps")))
                .globalBatch(Integer.parseInt(p.getProperty("globalBatch")))
                .seed(Long.parseLong(p.getProperty("seed")))
                .learningRate(Double.parseDouble(p.getProperty("learningRate")))
                .warmupSteps(Long.parseLong(p.getProperty("warmupSteps")))
                .evalEvery(Long.parseLong(p.getProperty("evalEvery")))
                .threads(Integer.parseInt(p.getProperty("threadsPerWorker")))
                .overlap(Boolean.parseBoolean(p.getProperty("overlap", "true")))
                .checkpointEvery(checkpointEvery)
                .checkpointDir(checkpointEvery > 0 ? CheckpointNames.jobDirectory(cluster.workDir()) : null)
                .diloco(diloco);
        if (p.getProperty("evalWindows") != null) trainer.evalWindows(Integer.parseInt(p.getProperty("evalWindows")));
        if (p.getProperty("gradClipNorm") != null) trainer.gradClipNorm(Double.parseDouble(p.getProperty("gradClipNorm")));
        CollectiveSettings collective = new CollectiveSettings(Algorithm.fromName(p.getProperty("algorithm")),
                Long.parseLong(p.getProperty("bucketBytes")),
                WireDtype.fromName(p.getProperty("wireDtype", WireDtype.FP32.configName())),
                Long.parseLong(p.getProperty("pacingBytesPerSecond")),
                OuterDtype.fromName(p.getProperty("outerDtype", OuterDtype.DEFAULT.configName())));
        return TrainJobSpec.builder().cluster(cluster).trainer(trainer.build()).collective(collective)
                .wireSecurity(WireSecurity.fromName(p.getProperty("wireSecurity", TrainJobSpec.DEFAULT_WIRE_SECURITY)))
                .data(Path.of(p.getProperty("data")))
                .checksumEvery(Long.parseLong(p.getProperty("checksumEvery")))
                .resume(p.getProperty("resume") == null ? null : Path.of(p.getProperty("resume")))
                .rateLimit(p.getProperty("rateLimit"))
                .opTimeout(Duration.ofSeconds(Long.parseLong(p.getProperty("opTimeoutSeconds",
                        Long.toString(TrainJobSpec.DEFAULT_OP_TIMEOUT_SECONDS)))))
                .build();
    }

    /**
     * A training section as YAML read it ({@link io.xaforward.common.YamlTree}): a mapping of settings, every value
     * a single scalar kept as written (the worker parses and checks them as it does its command line), every key one
     * of {@link #SECTION_KEYS}. {@code where} names the section in errors ({@code training}), {@code fail} makes them.
     */
    public static Map<String, String> readSection(Object mapping, String where, Function<String, RuntimeException> fail) {
        if (!(mapping instanceof Map<?, ?> m)) throw fail.apply(where + ": expected a mapping of settings, e.g. {preset: gpt2-tiny, steps: 1000}");
        Map<String, String> out = new LinkedHashMap<>();
        for (var e : m.entrySet()) {
            if (!(e.getValue() instanceof String v)) throw fail.apply(where + "." + e.getKey() + ": expected a single value");
            String key = String.valueOf(e.getKey());
            if (!SECTION_KEYS.contains(key)) {
                throw fail.apply(where + "." + key + " is not a job setting (allowed: "
                        + String.join(", ", new TreeSet<>(SECTION_KEYS)) + ")");
            }
            out.put(key, v.trim());
        }
        return out;
    }

    /**
     * Settings as a training section's flow mapping ({@code {preset: tiny, steps: 9}}), for a cluster file or etcd's
     * key; every key must be one of {@link #SECTION_KEYS}, every value one word.
     */
    public static String writeSection(Map<String, String> settings) {
        StringBuilder s = new StringBuilder("{");
        for (var e : settings.entrySet()) {
            if (!SECTION_KEYS.contains(e.getKey())) throw new IllegalArgumentException(e.getKey() + " is not a job setting");
            if (s.length() > 1) s.append(", ");
            s.append(e.getKey()).append(": ").append(e.getValue());
        }
        return s.append('}').toString();
    }
}
