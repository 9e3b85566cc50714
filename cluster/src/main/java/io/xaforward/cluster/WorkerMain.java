package io.xaforward.cluster;

import io.xaforward.cluster.RankNetwork;
import io.xaforward.collective.CollectiveConfig;
import io.xaforward.collective.Collectives;
import io.xaforward.testbed.Node;
import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.DjlRuntime;
import io.xaforward.training.Evaluation;
import io.xaforward.training.StepStats;
import io.xaforward.training.Tokenizer;
import io.xaforward.training.TrainerConfig;
import io.xaforward.training.TrainingData;
import io.xaforward.transport.ReliableTransport;
import io.xaforward.transport.TransportConfig;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;

/**
 * One rank of a distributed training job, run by {@link TrainingJob} as its own JVM inside the rank's host
 * namespace: {@code WorkerMain JOB.properties RANK}. Trains with gradients all-reduced across data centers through
 * the gateways, and reports progress as {@link WorkerLine}s on stdout.
 */
public final class WorkerMain {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(WorkerMain.class);
    private WorkerMain() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: WorkerMain JOB.properties RANK");
            System.exit(2);
        }
        TrainJobSpec spec = TrainJobSpec.read(Path.of(args[0]));
        int rank = Integer.parseInt(args[1]);
        try {
            run(spec, rank);
        } catch (Throwable t) {
            LOG.error("rank {} failed", rank, t);
            // The launcher shows this last line as the reason (TrainingJob.lastError); the stack trace stays in the log.
            System.err.println("xaf: " + (t.getMessage() != null ? t.getMessage() : t.toString()));
            System.out.flush();
            System.exit(1);
        }
        System.exit(0);
    }

    static void run(TrainJobSpec spec, int rank) throws Exception {
        RankNetwork net = RankNetwork.of(spec.topology(), spec.prefix(), spec.jobId(), spec.jobToken(), rank, spec.gatewayMode(),
                spec.endpoint());
        int world = net.worldSize();
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
                .overlap(spec.overlap())
                .build();

        try (ReliableTransport transport = new ReliableTransport(tc.build(), net.addressBook(), net.openPort(spec.jobToken())).start();
             Collectives collectives = new Collectives(net.group(), transport,
                     CollectiveConfig.defaults().withBucketBytes(spec.bucketBytes()).withAlgorithm(spec.algorithm())
                             .withOperationTimeout(Duration.ofSeconds(120))
                             .withWireDtype(spec.wireDtype()));
             DataParallelTrainer trainer = new DataParallelTrainer(config, data.train(), data.validation(), rank, world,
                     collectives::allReduceMean, new BroadcastSums(collectives))) {
            Path settings = spec.workDir().resolve("config.json"); // written by xaf train: every option of the run
            if (Files.exists(settings)) trainer.recordSettings(Files.readString(settings));
            if (spec.resume() != null) trainer.loadCheckpoint(spec.resume());
            System.out.println(WorkerLine.format("start", "rank", rank, "params", trainer.parameterCount(),
                    "form", self.form().configName(), "dc", self.datacenter(), "endpoint", net.endpoint().configName()));
            trainer.train(stats -> {
                report(stats, trainer, spec, transport);
                JobCheckpoints.afterStep(spec, rank, trainer);
            });
            if (rank == 0) trainer.saveCheckpoint(TrainingJob.finalCheckpoint(spec));
            System.out.println(WorkerLine.format("done", "rank", rank, "checksum", Long.toHexString(trainer.weightChecksum()),
                    "retransmits", transport.stats().retransmits(), "sent_bytes", transport.stats().bytesSent()));
            System.out.flush();
            collectives.finish();
        }
    }

    /** The validation figures of a step line (what {@link TrainingJob} reads back into an {@link Evaluation}). */
    static String validationValues(Evaluation v) {
        return WorkerLine.values("val", String.format(Locale.ROOT, "%.6f", v.loss()),
                "val_se", String.format(Locale.ROOT, "%.6g", v.standardError()), "val_windows", v.windows(),
                "val_split_windows", v.splitWindows());
    }

    private static void report(StepStats s, DataParallelTrainer trainer, TrainJobSpec spec, ReliableTransport transport) {
        long step = s.step() + 1;
        boolean checksum = spec.checksumEvery() > 0 && (step % spec.checksumEvery() == 0 || step == spec.steps());
        StringBuilder line = new StringBuilder(WorkerLine.format("step", "step", step,
                "loss", String.format(Locale.ROOT, "%.6f", s.loss()),
                "ms", String.format(Locale.ROOT, "%.2f", s.computeMillis() + s.communicationMillis() + s.optimizerMillis()),
                "compute_ms", String.format(Locale.ROOT, "%.2f", s.computeMillis() + s.optimizerMillis()),
                "comm_ms", String.format(Locale.ROOT, "%.2f", s.communicationMillis()),
                "tok_s", String.format(Locale.ROOT, "%.1f", s.tokensPerSecond()),
                "lr", String.format(Locale.ROOT, "%.6g", s.learningRate()),
                "sent_bytes", transport.stats().bytesSent(), "retransmits", transport.stats().retransmits()));
        if (s.validation() != null) line.append(' ').append(validationValues(s.validation()));
        if (checksum) line.append(" checksum=").append(Long.toHexString(trainer.weightChecksum()));
        System.out.println(line);
        System.out.flush();
    }
}
