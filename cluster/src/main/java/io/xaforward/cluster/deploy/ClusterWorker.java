package io.xaforward.cluster.deploy;

import io.xaforward.cluster.BroadcastSums;
import io.xaforward.cluster.CheckpointNames;
import io.xaforward.cluster.RankRuntime;
import io.xaforward.cluster.SyncGroups;
import io.xaforward.cluster.TrainingRank;
import io.xaforward.cluster.WorkerLine;
import io.xaforward.cluster.world.World;
import io.xaforward.cluster.world.WorldNetwork;
import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.DjlRuntime;
import io.xaforward.training.ModelConfig;
import io.xaforward.training.Tokenizer;
import io.xaforward.training.TrainingData;
import io.xaforward.training.TrainerConfig;
import io.xaforward.transport.RunNonce;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;

/**
 * One rank of a job on a real host ({@code xaf worker}): learns the world from its {@link WorldSource}, joins the job
 * on its own address ({@link RankRuntime#join}, as {@code xaf agent} does), agrees with the other ranks where to start (the newest common checkpoint with
 * {@code --resume}, else step 0), trains, checkpoints, and prints {@link WorkerLine}s on {@code out}: {@code start},
 * {@code resume}, {@code step}, {@code checkpoint}, {@code done} (with the weight checksum).
 */
public final class ClusterWorker {
    private final WorkerOptions o;
    private final PrintStream out;
    /** The run's settings (JSON), recorded beside and inside this rank's checkpoints; null: none. */
    private final String settingsJson;

    public ClusterWorker(WorkerOptions options, PrintStream out) {
        this(options, out, null);
    }

    /**
     * @param settingsJson every option of the run as JSON ({@code xaf worker} writes it): written to
     *                     {@link CheckpointNames#rankSettings} once the rank has joined the world (a rank that never joins leaves no
     *                     checkpoint directory behind) and recorded in every checkpoint; null: none
     */
    public ClusterWorker(WorkerOptions options, PrintStream out, String settingsJson) {
        this.o = options;
        this.out = out;
        this.settingsJson = settingsJson;
    }

    /**
     * Opens the training data the way {@code xaf train} does (a prepared directory, a .bin file or text) before the
     * rank joins the world, and fails clearly when it is missing or its ids do not fit the preset's vocabulary.
     */
    public static TrainingData.Opened openData(Path data, Tokenizer tokenizer, String preset) throws IOException {
        if (!Files.exists(data)) throw new IllegalArgumentException("training data " + data + " not found");
        TrainingData.Opened opened = TrainingData.open(data, tokenizer);
        int vocabulary = ModelConfig.preset(preset).vocabSize();
        if (opened.train().vocabSize() > vocabulary) {
            throw new IllegalArgumentException("training data " + data + " has ids of " + opened.tokenizer().name() + " ("
                    + opened.train().vocabSize() + "), more than preset " + preset + "'s vocabulary of " + vocabulary
                    + " (use a GPT-2 preset such as gpt2-tiny, or data tokenized with bytes)");
        }
        return opened;
    }

    public void run(WorldSource source) throws Exception {
        TrainerConfig config = o.trainer();
        JoinSpec join = o.join();
        TrainingData.Opened data = openData(o.data(), o.tokenizer(), config.preset());
        World world = source.join(join);
        Files.createDirectories(o.checkpointDir());
        if (settingsJson != null) {
            Files.writeString(CheckpointNames.rankSettings(o.checkpointDir(), o.rank()), settingsJson.endsWith("\n") ? settingsJson : settingsJson + "\n");
        }
        WorldNetwork net = new WorldNetwork(world, o.rank(), join.iface());

        DjlRuntime.load(DjlRuntime.CACHE_DIR, config.threads());
        try (RankRuntime runtime = RankRuntime.join(net, join, out);
             SyncGroups sync = new SyncGroups(o.sync(), join.collective().outerDtype(), runtime.collectives())) {
            RunNonce agreed = runtime.runNonce();
            TrainingRank.run(runtime, sync, config, data, new BroadcastSums(runtime.collectives()), settingsJson, o.checksumEvery(),
                    new TrainingRank.Checkpoints() {
                        @Override
                        public Object[] start(DataParallelTrainer trainer) throws Exception {
                            Set<Long> have = o.resume() ? CheckpointNames.rankSteps(o.checkpointDir(), o.rank()) : Set.of();
                            long from = runtime.startUp(join.startTimeout(),
                                    start -> ResumePoint.agree(start, have, config.checkpointEvery(), config.steps()));
                            if (from > 0) trainer.loadCheckpoint(CheckpointNames.rankStepToRead(o.checkpointDir(), o.rank(), from));
                            return new Object[]{"form", net.self().form().configName(), "dc", net.self().datacenter(),
                                    "from_step", from, "run", agreed == null ? "none" : agreed.hex().substring(0, 8)};
                        }

                        @Override
                        public Path periodic(long completedSteps) {
                            return CheckpointNames.rankStep(o.checkpointDir(), o.rank(), completedSteps); // every rank its own
                        }

                        @Override
                        public Path last() {
                            return CheckpointNames.rankFinal(o.checkpointDir(), o.rank());
                        }
                    });
        }
    }
}
