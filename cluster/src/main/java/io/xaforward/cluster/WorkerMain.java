package io.xaforward.cluster;

import io.xaforward.collective.CollectiveConfig;
import io.xaforward.testbed.Node;
import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.DjlRuntime;
import io.xaforward.training.Tokenizer;
import io.xaforward.training.TrainerConfig;
import io.xaforward.training.TrainingData;
import io.xaforward.transport.TransportConfig;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * One rank of a distributed training job, run by {@link TrainingJob} as its own JVM inside the rank's host
 * namespace: {@code WorkerMain JOB.properties RANK}. Trains with gradients all-reduced across data centers through
 * the gateways, and reports progress as {@link WorkerLine}s on stdout.
 */
public final class WorkerMain {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(WorkerMain.class);
    private WorkerMain() {}

    public static void main(String[] args) {
        RankRuntime.runMain(args, "WorkerMain JOB.properties RANK", (spec, rank) -> run(TrainJobSpec.read(spec), rank),
                (rank, t) -> {
                    LOG.error("rank {} failed", rank, t);
                    // The launcher shows this last line as the reason (TrainingJob.lastError); the stack trace stays in the log.
                    System.err.println("xaf: " + (t.getMessage() != null ? t.getMessage() : t.toString()));
                });
    }

    static void run(TrainJobSpec spec, int rank) throws Exception {
        RankNetwork net = RankNetwork.of(spec.topology(), spec.prefix(), spec.jobId(), spec.jobToken(), rank, spec.gatewayMode(),
                spec.endpoint(), spec.flows());
        Node self = net.self();

        DjlRuntime.load(DjlRuntime.CACHE_DIR, spec.threadsPerWorker());
        // A text file is read as bytes here; the launcher turns text for other tokenizers into prepared .bin data.
        TrainingData.Opened data = TrainingData.open(spec.data(), Tokenizer.byName("bytes"));

        TransportConfig.Builder tc = net.transportConfig(spec.jobToken(), TransportConfig.JOB_ACK_TIMEOUT);
        spec.runKeys().apply(spec.wireSecurity(), tc);
        if (spec.pacingBytesPerSecond() > 0) tc.pacing(spec.pacingBytesPerSecond(), 0);

        TrainerConfig config = TrainerConfig.builder(spec.preset())
                .steps(spec.steps()).globalBatch(spec.globalBatch()).seed(spec.seed())
                .learningRate(spec.learningRate()).warmupSteps(spec.warmupSteps())
                .evalEvery(spec.evalEvery()).evalWindows(spec.evalWindows()).threads(spec.threadsPerWorker())
                .overlap(spec.overlap()).diloco(spec.diloco())
                .build();
        CollectiveConfig collectiveConfig = CollectiveConfig.defaults().withBucketBytes(spec.bucketBytes())
                .withAlgorithm(spec.algorithm()).withOperationTimeout(Duration.ofSeconds(120))
                .withWireDtype(spec.wireDtype());

        try (RankRuntime runtime = RankRuntime.start(net, tc.build(), net.openPort(spec.jobToken()), collectiveConfig, System.out);
             SyncGroups sync = new SyncGroups(spec.sync(), spec.outerDtype(), runtime.collectives());
             DataParallelTrainer trainer = new DataParallelTrainer(config, data.train(), data.validation(), rank,
                     net.worldSize(), sync.inner(), new BroadcastSums(runtime.collectives()), sync.outer())) {
            Path settings = spec.workDir().resolve("config.json"); // written by xaf train: every option of the run
            if (Files.exists(settings)) trainer.recordSettings(Files.readString(settings));
            if (spec.resume() != null) trainer.loadCheckpoint(JobCheckpoints.resumeFile(spec, runtime.collectives().group()));
            runtime.report("start", "rank", rank, "params", trainer.parameterCount(),
                    "form", self.form().configName(), "dc", self.datacenter(), "endpoint", net.endpoint().configName());
            trainer.train(stats -> {
                if (trainer.diloco()) {
                    runtime.reportStep(stats, spec.checksumEvery(), spec.steps(), trainer::syncedChecksum, sync::outerWanBytes);
                } else {
                    runtime.reportStep(stats, spec.checksumEvery(), spec.steps(), trainer::weightChecksum);
                }
                JobCheckpoints.afterStep(spec, runtime.collectives().group(), trainer);
            });
            if (rank == 0) trainer.saveCheckpoint(TrainingJob.finalCheckpoint(spec));
            runtime.finish("checksum", Long.toHexString(trainer.weightChecksum()));
        }
    }
}
