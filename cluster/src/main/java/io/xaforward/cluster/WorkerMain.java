package io.xaforward.cluster;

import io.xaforward.collective.CollectiveConfig;
import io.xaforward.collective.CollectiveGroup;
import io.xaforward.testbed.Node;
import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.DjlRuntime;
import io.xaforward.training.Tokenizer;
import io.xaforward.training.TrainingData;
import io.xaforward.transport.TransportConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * One rank of a distributed training job, run by {@link TrainingJob} as its own JVM inside the rank's host
 * namespace: {@code WorkerMain JOB.properties RANK}. Trains with gradients all-reduced across data centers through
 * the gateways, and reports progress as {@link WorkerLine}s on stdout.
 */
public final class WorkerMain {
    private static final Logger LOG = LoggerFactory.getLogger(WorkerMain.class);
    private WorkerMain() {}

    public static void main(String[] args) {
        RankRuntime.runMain(args, "WorkerMain JOB.properties RANK", (spec, rank) -> run(TrainJobCodec.read(spec), rank),
                (rank, t) -> {
                    LOG.error("rank {} failed", rank, t);
                    // The launcher shows this last line as the reason (TrainingJob.lastError); the stack trace stays in the log.
                    System.err.println("xaf: " + (t.getMessage() != null ? t.getMessage() : t.toString()));
                });
    }

    static void run(TrainJobSpec spec, int rank) throws Exception {
        ClusterRun.Spec cluster = spec.cluster();
        RankNetwork net = RankNetwork.of(cluster.topology(), cluster.prefix(), cluster.jobId(), cluster.jobToken(), rank,
                cluster.gatewayMode(), cluster.endpoint(), cluster.flows());
        Node self = net.self();

        DjlRuntime.load(DjlRuntime.CACHE_DIR, spec.trainer().threads());
        // A text file is read as bytes here; the launcher turns text for other tokenizers into prepared .bin data.
        TrainingData.Opened data = TrainingData.open(spec.data(), Tokenizer.byName("bytes"));

        TransportConfig.Builder tc = net.transportConfig(spec.cluster().jobToken(), TransportConfig.JOB_ACK_TIMEOUT);
        spec.runKeys().apply(spec.wireSecurity(), tc);
        if (spec.collective().pacingBytesPerSecond() > 0) tc.pacing(spec.collective().pacingBytesPerSecond(), 0);

        CollectiveConfig collectiveConfig = spec.collective().config(spec.opTimeout());

        try (RankRuntime runtime = RankRuntime.start(net, tc.build(), net.openPort(spec.cluster().jobToken()), collectiveConfig, System.out);
             SyncGroups sync = new SyncGroups(spec.sync(), spec.collective().outerDtype(), runtime.collectives())) {
            Path settings = spec.workDir().resolve("config.json"); // written by xaf train: every option of the run
            CollectiveGroup group = runtime.collectives().group();
            TrainingRank.run(runtime, sync, spec.trainer(), data, new BroadcastSums(runtime.collectives()),
                    Files.exists(settings) ? Files.readString(settings) : null, spec.checksumEvery(),
                    new TrainingRank.Checkpoints() {
                        @Override
                        public Object[] start(DataParallelTrainer trainer) throws Exception {
                            if (spec.resume() != null) trainer.loadCheckpoint(JobCheckpoints.resumeFile(spec, group));
                            return new Object[]{"form", self.form().configName(), "dc", self.datacenter(),
                                    "endpoint", net.endpoint().configName()};
                        }

                        @Override
                        public Path periodic(long completedSteps) {
                            return JobCheckpoints.periodic(spec, group, completedSteps);
                        }

                        @Override
                        public Path last() {
                            return JobCheckpoints.last(spec, group);
                        }
                    });
        }
    }
}
