package io.xaforward.bench.compute;

import io.xaforward.bench.Machine;
import io.xaforward.bench.TorchBlas;
import io.xaforward.bench.train.DdpGlooPeer;
import io.xaforward.cluster.WorkerLine;
import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.DjlRuntime;
import io.xaforward.training.GradientReducer;
import io.xaforward.training.ModelConfig;
import io.xaforward.training.StepStats;
import io.xaforward.training.SyntheticCorpus;
import io.xaforward.training.TokenDataset;
import io.xaforward.training.Tokenizer;
import io.xaforward.training.TrainerConfig;
import io.xaforward.training.TrainingData;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * {@code xaf bench compute}: what one training step costs on the CPU in XAForward's Java trainer (DJL, libtorch) and in
 * PyTorch on the same model, batch, data and initial weights, with no network in the way. A step is forward, backward,
 * global-norm clipping and AdamW. Each cell (preset, micro-batch, intra-op threads) runs every trainer once per run,
 * the trainers interleaved run by run (their order alternates), so a change in the machine's load falls on all of
 * them; each figure is the median over runs of each run's median step.
 *
 * <p>The Java trainer runs in this JVM, a fresh {@link DataParallelTrainer} per measurement with the thread count set
 * through {@link DjlRuntime#intraOpThreads(int)}. Its overlapped backward ({@code --overlap on}, stage by stage) is
 * only chosen with more than one rank, so the overlap row is rank 0 of a world of two whose reducer keeps the local
 * gradient (same compute as a real rank, no communication). PyTorch is {@code ddp_gloo_train.py} with
 * {@code --world 1} (no process group), Debian's torch on the BLAS that {@link TorchBlas#requireOptimised} checks,
 * from XAF's initial weights ({@link DdpGlooPeer#writeInitialWeights}) on the very token windows XAF's sampler gives
 * ({@link DdpGlooPeer#writeBatches}), so the first step's losses of the Java trainer without overlap and of torch
 * must agree.
 *
 * <p>The {@code pytorch} row runs in this JVM's environment, so with the C heap settings the Java trainer gets
 * (GLIBC_TUNABLES as {@code ./xaf} sets it for training, reported); {@code pytorch stock-heap} runs without them,
 * as torch runs by default: on models with large output tensors the heap decides more than either trainer does.
 */
public final class ComputeBench {
    public static final String JAVA = "java";
    public static final String JAVA_OVERLAP = "java overlap";
    public static final String TORCH = "pytorch";
    /** torch with glibc's default heap: GLIBC_TUNABLES removed from its environment. */
    public static final String TORCH_STOCK_HEAP = "pytorch stock-heap";
    public static final List<String> TRAINERS = List.of(JAVA, JAVA_OVERLAP, TORCH, TORCH_STOCK_HEAP);
    static final String PYTHON = "/usr/bin/python3";
    private static final long SEED = 4242;

    /** One model preset at one micro-batch (the windows one process computes per step). */
    public record Case(String preset, int batch) {
        public Case {
            ModelConfig.preset(preset); // an unknown name fails here, with the list of presets
            if (batch < 1) throw new IllegalArgumentException("batch must be >= 1 in " + preset + ":" + batch);
        }

        /** {@code PRESET:BATCH}, e.g. {@code wide:2}. */
        public static Case parse(String word) {
            int colon = word.indexOf(':');
            if (colon < 0) throw new IllegalArgumentException("expected PRESET:BATCH (e.g. wide:2), got '" + word + "'");
            try {
                return new Case(word.substring(0, colon), Integer.parseInt(word.substring(colon + 1)));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("batch of '" + word + "' is not a number");
            }
        }

        public String word() {
            return preset + ":" + batch;
        }
    }

    /**
     * The micro-batches the benches give one process: tiny and wide at 8 windows over 4 ranks ({@code xaf bench train},
     * the soak), small likewise, gpt2-tiny at the demo's 16 over 4 ranks, and wide's whole batch of 8 in one process
     * (the figure the field notes give for torch).
     */
    public static final List<Case> DEFAULT_CASES = List.of(new Case("tiny", 2), new Case("wide", 2),
            new Case("wide", 8), new Case("small", 2), new Case("gpt2-tiny", 4));

    public record Options(List<Case> cases, List<Integer> threads, List<String> trainers, int runs, int warmupSteps,
                          int steps) {
        public Options {
            if (cases.isEmpty() || threads.isEmpty() || trainers.isEmpty()) throw new IllegalArgumentException("nothing to run");
            if (runs < 1 || warmupSteps < 0 || steps < 1) throw new IllegalArgumentException("--runs and --steps must be >= 1, --warmup >= 0");
            for (int t : threads) if (t < 1) throw new IllegalArgumentException("threads must be >= 1, got " + t);
            for (String t : trainers) if (!TRAINERS.contains(t)) throw new IllegalArgumentException("unknown trainer '" + t + "', expected one of " + TRAINERS);
        }

        /** One run of three steps of the tiny model, one thread, every trainer: a check that the bench works. */
        public static Options quick() {
            return new Options(List.of(new Case("tiny", 2)), List.of(1), TRAINERS, 1, 1, 3);
        }
    }

    /** One trainer's steps in one cell of one run: step wall times in ms (warm-up excluded) and the loss of step 1. */
    public record Sample(Case cell, int threads, String trainer, int run, double[] stepMillis, double[] forwardBackwardMillis,
                         double[] optimizerMillis, double firstLoss) {
        double median() {
            return median(stepMillis);
        }

        static double median(double[] values) {
            if (values.length == 0) return Double.NaN;
            double[] v = values.clone();
            Arrays.sort(v);
            return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
        }
    }

    /** A cell's figure for one trainer: median over runs of each run's median step, with the runs' range. */
    public record Row(String preset, int batch, int threads, String trainer, double medianMs, double minMs, double maxMs,
                      double forwardBackwardMs, double optimizerMs, double firstLoss, int runs) {}

    public record Result(String command, String machine, String loadBefore, String loadAfter, String glibcTunables, List<String> torchBlas,
                         String torchVersion, Options options, List<Row> rows, List<Sample> samples) {
        /** The row of {@code trainer} in the cell, or null. */
        public Row row(Case cell, int threads, String trainer) {
            return rows.stream().filter(r -> r.preset().equals(cell.preset()) && r.batch() == cell.batch()
                    && r.threads() == threads && r.trainer().equals(trainer)).findFirst().orElse(null);
        }
    }

    private final Options options;
    private final Path work;
    private final PrintStream log;

    public ComputeBench(Options options, Path work, PrintStream log) {
        this.options = options;
        this.work = work;
        this.log = log;
    }

    public Result run(String command) throws Exception {
        boolean torch = options.trainers().contains(TORCH) || options.trainers().contains(TORCH_STOCK_HEAP);
        List<String> blas = torch ? TorchBlas.requireOptimised(PYTHON) : List.of();
        String loadBefore = loadAverage();
        Files.createDirectories(work);
        Path corpus = SyntheticCorpus.write(work.resolve("corpus.txt"), SEED, 400_000);
        TokenDataset train = TrainingData.open(corpus, Tokenizer.byName("bytes")).train();
        Path script = torch ? DdpGlooPeer.copyScript(work) : null;
        // Per cell: the torch run's inputs (batches and XAF's initial weights), written once.
        Map<String, List<String>> torchArguments = new LinkedHashMap<>();
        String torchVersion = null;
        List<Sample> samples = new ArrayList<>();
        for (int run = 0; run < options.runs(); run++) {
            for (Case cell : options.cases()) {
                for (int threads : options.threads()) {
                    List<String> order = new ArrayList<>(options.trainers());
                    if (run % 2 == 1) java.util.Collections.reverse(order);
                    for (String trainer : order) {
                        TrainerConfig config = config(cell, threads, trainer);
                        Sample s;
                        if (trainer.startsWith(TORCH)) {
                            String key = cell.word() + "/" + threads;
                            List<String> args = torchArguments.get(key);
                            if (args == null) {
                                Path batches = DdpGlooPeer.writeBatches(train, config, work.resolve("batches-" + cell.preset() + "-" + cell.batch() + ".i32"));
                                Path init = DdpGlooPeer.writeInitialWeights(config, train, work.resolve("init-" + cell.preset() + ".safetensors"));
                                args = DdpGlooPeer.arguments(config, batches, init, 0, 4 << 20);
                                torchArguments.put(key, args);
                            }
                            TorchRun t = torch(script, args, cell, threads, run, trainer);
                            s = t.sample();
                            torchVersion = t.version();
                        } else {
                            s = java(config, train, cell, threads, trainer, run);
                        }
                        samples.add(s);
                        log.printf(Locale.ROOT, "compute: run %d %-12s threads %d %-13s %8.1f ms/step (loss %.5f)%n",
                                run + 1, cell.word(), threads, trainer, s.median(), s.firstLoss());
                    }
                }
            }
        }
        String tunables = System.getenv("GLIBC_TUNABLES");
        return new Result(command, Machine.describe(), loadBefore, loadAverage(), tunables == null ? "" : tunables, blas, torchVersion, options,
                rows(samples), samples);
    }

    /** Every trainer of a cell gets the same steps, seed and schedule; the overlap row is rank 0 of two. */
    private TrainerConfig config(Case cell, int threads, String trainer) {
        int world = trainer.equals(JAVA_OVERLAP) ? 2 : 1;
        return TrainerConfig.builder(cell.preset()).steps(options.warmupSteps() + options.steps())
                .globalBatch(cell.batch() * world).seed(SEED).threads(threads).overlap(trainer.equals(JAVA_OVERLAP))
                .build();
    }

    private Sample java(TrainerConfig config, TokenDataset train, Case cell, int threads, String trainer, int run) {
        int world = trainer.equals(JAVA_OVERLAP) ? 2 : 1;
        DjlRuntime.intraOpThreads(threads);
        int total = options.warmupSteps() + options.steps();
        double[] step = new double[options.steps()], fb = new double[options.steps()], opt = new double[options.steps()];
        double firstLoss = Double.NaN;
        // The overlap row's reducer keeps the local gradient: a rank's compute without the network.
        try (DataParallelTrainer trainer0 = new DataParallelTrainer(config, train, null, 0, world, GradientReducer.single())) {
            for (int i = 0; i < total; i++) {
                long start = System.nanoTime();
                StepStats stats = trainer0.trainStep();
                double ms = (System.nanoTime() - start) / 1e6;
                if (i == 0) firstLoss = stats.localLoss();
                int k = i - options.warmupSteps();
                if (k >= 0) {
                    step[k] = ms;
                    fb[k] = stats.computeMillis();
                    opt[k] = stats.optimizerMillis();
                }
            }
        }
        return new Sample(cell, threads, trainer, run, step, fb, opt, firstLoss);
    }

    private record TorchRun(Sample sample, String version) {}

    private TorchRun torch(Path script, List<String> args, Case cell, int threads, int run, String trainer)
            throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(PYTHON, "-u", script.toString(), "--rank", "0", "--world", "1"));
        command.addAll(args);
        Path errors = work.resolve("torch-" + cell.preset() + "-" + cell.batch() + "-t" + threads + "-run" + run
                + (trainer.equals(TORCH) ? "" : "-stock-heap") + ".log");
        ProcessBuilder builder = new ProcessBuilder(command).redirectError(errors.toFile());
        if (trainer.equals(TORCH_STOCK_HEAP)) builder.environment().remove("GLIBC_TUNABLES");
        Process p = builder.start();
        List<String> out = p.inputReader().lines().toList();
        if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new IllegalStateException("torch step script failed for " + cell.word() + " threads " + threads + ": "
                    + Files.readString(errors).strip());
        }
        List<WorkerLine> steps = new ArrayList<>();
        String version = null;
        for (String line : out) {
            WorkerLine l = WorkerLine.parse(line);
            if (l == null) continue;
            if (l.kind().equals("start")) {
                version = l.get("torch");
                if (l.integer("threads") != threads) throw new IllegalStateException("torch ran " + l.get("threads") + " threads, asked " + threads);
            }
            if (l.kind().equals("step")) steps.add(l);
        }
        int total = options.warmupSteps() + options.steps();
        if (steps.size() != total) throw new IllegalStateException("torch reported " + steps.size() + " steps of " + total + ": " + out);
        double[] step = new double[options.steps()];
        for (int k = 0; k < step.length; k++) step[k] = steps.get(options.warmupSteps() + k).number("ms");
        return new TorchRun(new Sample(cell, threads, trainer, run, step, new double[0], new double[0],
                steps.getFirst().number("local_loss")), version);
    }

    static List<Row> rows(List<Sample> samples) {
        Map<String, List<Sample>> byRow = new LinkedHashMap<>();
        for (Sample s : samples) byRow.computeIfAbsent(s.cell().word() + "/" + s.threads() + "/" + s.trainer(), k -> new ArrayList<>()).add(s);
        List<Row> rows = new ArrayList<>();
        for (List<Sample> list : byRow.values()) {
            Sample first = list.getFirst();
            double[] medians = list.stream().mapToDouble(Sample::median).toArray();
            double[] fb = list.stream().mapToDouble(s -> Sample.median(s.forwardBackwardMillis())).toArray();
            double[] opt = list.stream().mapToDouble(s -> Sample.median(s.optimizerMillis())).toArray();
            rows.add(new Row(first.cell().preset(), first.cell().batch(), first.threads(), first.trainer(),
                    Sample.median(medians), Arrays.stream(medians).min().orElseThrow(), Arrays.stream(medians).max().orElseThrow(),
                    Sample.median(fb), Sample.median(opt), first.firstLoss(), list.size()));
        }
        return rows;
    }

    private static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException e) {
            return "?";
        }
    }
}
