package io.xaforward.cli;

import io.xaforward.bench.soak.FaultSchedule;
import io.xaforward.bench.soak.SoakBench;
import io.xaforward.bench.soak.SoakReport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * {@code xaf bench soak}: a job trains for N minutes while a seeded schedule kills ranks, the gateway and etcd; the
 * report says what the faults cost, and the exit status is 1 unless every rank's steps add up through its restarts
 * and the weights equal those of a fault-free run of the same seed, step by step.
 */
@Command(name = "soak", mixinStandardHelpOptions = true,
        description = {"Soak under faults: four ranks in two emulated data centers (etcd rendezvous, an XDP gateway"
                + " following the jobs' registrations, one xaf launch per host) train for --minutes while a schedule"
                + " SIGKILLs ranks, the gateway and etcd. Reports steps lost, restarts, bytes resent, gateway drops and"
                + " time to recover per fault into soak.md, soak.json and soak.png. Then trains the same job without"
                + " faults to the same step; exit status 1 unless every rank's steps add up (each step once, through"
                + " its restarts) and the weights equal the fault-free run's at every step. Needs root and the etcd"
                + " binary (etcd-server)."},
        footerHeading = "%nExample:%n",
        footer = {"  xaf bench soak --minutes 10 --seed 7 --out bench-results",
                "  xaf bench soak --minutes 2 --schedule worker1@20,gateway@75"})
final class BenchSoakCommand implements Callable<Integer> {
    @Option(paramLabel = "N", names = "--minutes", defaultValue = "10", description = "how long the job trains, from its first step (default: ${DEFAULT-VALUE})")
    double minutes;

    @Option(paramLabel = "LIST", names = "--schedule", description = "faults as COMPONENT@SECONDS after the first step, comma"
            + " separated; COMPONENT is workerRANK (worker alone: a seeded rank), gateway or etcd, e.g."
            + " worker1@120,gateway@180,etcd@300 (default: a rank about every 120 s, the gateway about every 180 s,"
            + " etcd once in the middle third, times jittered by the seed)")
    String schedule;

    @Option(paramLabel = "N", names = "--seed", defaultValue = "1", description = "seed of the schedule and of the training (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(paramLabel = "NAME", names = "--preset", defaultValue = "tiny", description = "model preset (default: ${DEFAULT-VALUE})")
    String preset;

    @Option(paramLabel = "N", names = "--checkpoint-every", defaultValue = "5", description = "the ranks' checkpoint interval in steps (default: ${DEFAULT-VALUE})")
    int checkpointEvery;

    @Option(paramLabel = "SECONDS", names = "--op-timeout", defaultValue = "20", description = "the ranks' --op-timeout: how long they wait for a dead peer (default: ${DEFAULT-VALUE})")
    long opTimeout;

    @Option(paramLabel = "DIR", names = "--out", description = "output directory (default: xaf-bench/soak-TIME in the working directory; docs/bench holds the shipped report)")
    Path out;

    @Override
    public Integer call() throws Exception {
        if (!(minutes > 0)) throw new IllegalArgumentException("--minutes must be > 0");
        if (opTimeout < 1) throw new IllegalArgumentException("--op-timeout must be >= 1");
        double seconds = minutes * 60;
        FaultSchedule faults = schedule != null ? FaultSchedule.parse(schedule, 4, seed) : FaultSchedule.standard(seconds, 4, seed);
        out = BenchCommand.outputDirectory(out, "soak");
        String minutesWord = minutes == Math.rint(minutes) ? Long.toString((long) minutes) : String.format(Locale.ROOT, "%s", minutes);
        String command = "./xaf bench soak --minutes " + minutesWord + " --seed " + seed + " --schedule " + faults.word()
                + (preset.equals("tiny") ? "" : " --preset " + preset)
                + (checkpointEvery == 5 ? "" : " --checkpoint-every " + checkpointEvery)
                + (opTimeout == 20 ? "" : " --op-timeout " + opTimeout) + " --out " + out;
        System.out.println("soak: schedule " + faults.word() + " (seed " + seed + ")");
        SoakBench.Options o = new SoakBench.Options(seconds, faults, seed, TrainCommand.shippedTopology("two-dc.yaml"),
                preset, checkpointEvery, Duration.ofSeconds(opTimeout), Duration.ofSeconds(opTimeout + 5),
                Main.class.getName(), command);
        Path work = Files.createTempDirectory("xaf-soak-");
        SoakBench.Result r;
        try {
            r = new SoakBench(o, work, System.out).run();
        } catch (Exception | Error e) {
            System.out.println("soak: failed; the launchers' and gateway's logs are in " + work);
            throw e;
        }
        SoakReport.write(r, out);
        System.out.println(SoakReport.summary(r));
        System.out.println("bench: wrote " + out.resolve("soak.md") + ", soak.json, soak.png");
        SoakBench.deleteTree(work);
        return r.passed() ? 0 : 1;
    }
}
