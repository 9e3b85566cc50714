package io.xaforward.cli;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A one-node Slurm cluster on this machine for tests: Debian's munge and slurm-wlm (22.05) daemons started as child
 * processes, all their state, keys, sockets and logs in one temporary directory, the machine's /etc/slurm and
 * /etc/munge untouched (clients find the cluster through {@code SLURM_CONF}). The node is this host
 * ({@code hostname -s}) with 2 CPUs, a partition that lets four tasks share them (OverSubscribe=FORCE:4), no
 * accounting. Starting fails, with the daemons' logs, when a daemon does not come up or the node is not idle within
 * a minute; {@link #close} stops every daemon and removes the directory.
 */
final class LocalSlurm implements AutoCloseable {
    final Path dir;
    final Path conf;
    final String node;
    private final List<Process> daemons = new ArrayList<>();

    private final String extraConf;

    private LocalSlurm(Path dir, String node, String extraConf) {
        this.dir = dir;
        this.conf = dir.resolve("slurm.conf");
        this.node = node;
        this.extraConf = extraConf;
    }

    static LocalSlurm start() throws Exception {
        return start("");
    }

    /** As {@link #start()}, with {@code extraConf} (whole lines, e.g. {@code PrologSlurmctld=...}) added to slurm.conf. */
    static LocalSlurm start(String extraConf) throws Exception {
        Path dir = Files.createTempDirectory("xaf-slurm-");
        // munged refuses a socket in a directory others cannot traverse, or can write to
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
        LocalSlurm s = new LocalSlurm(dir, run(List.of("hostname", "-s"), Map.of()).strip(), extraConf);
        try {
            s.startDaemons();
            return s;
        } catch (Exception | Error e) {
            s.close();
            throw e;
        }
    }

    private void startDaemons() throws Exception {
        Path munge = Files.createDirectories(dir.resolve("munge"));
        Path key = munge.resolve("munge.key");
        run(List.of("mungekey", "--create", "--keyfile", key.toString(), "--bits", "1024"), Map.of());
        Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("r--------"));
        Path socket = munge.resolve("munge.socket");
        // -f: munged runs as root here (the test's user); it would otherwise insist on its own user
        daemon("munged", List.of("munged", "-F", "-f", "--key-file=" + key, "--socket=" + socket,
                "--pid-file=" + munge.resolve("munged.pid"), "--seed-file=" + munge.resolve("munged.seed"),
                "--log-file=" + munge.resolve("munged.log")));
        awaitFile(socket, "munged");
        Files.createDirectories(dir.resolve("state"));
        Files.createDirectories(dir.resolve("spool"));
        Files.writeString(conf, """
                ClusterName=xaftest
                SlurmctldHost=%1$s
                SlurmctldPort=%2$d
                SlurmdPort=%3$d
                SlurmUser=root
                SlurmdUser=root
                AuthType=auth/munge
                CredType=cred/munge
                AuthInfo=socket=%4$s
                StateSaveLocation=%5$s/state
                SlurmdSpoolDir=%5$s/spool
                SlurmctldPidFile=%5$s/slurmctld.pid
                SlurmdPidFile=%5$s/slurmd.pid
                SlurmctldLogFile=%5$s/slurmctld.log
                SlurmdLogFile=%5$s/slurmd.log
                ProctrackType=proctrack/linuxproc
                TaskPlugin=task/none
                SwitchType=switch/none
                MpiDefault=none
                ReturnToService=2
                KillWait=5
                MinJobAge=600
                SelectType=select/cons_tres
                SelectTypeParameters=CR_CPU
                JobAcctGatherType=jobacct_gather/none
                AccountingStorageType=accounting_storage/none
                JobCompType=jobcomp/none
                NodeName=%1$s CPUs=2 State=UNKNOWN
                PartitionName=xaf Nodes=%1$s Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
                """.formatted(node, freePort(), freePort(), socket, dir) + extraConf);
        daemon("slurmctld", List.of("slurmctld", "-D", "-i"));
        daemon("slurmd", List.of("slurmd", "-D"));
        long deadline = System.currentTimeMillis() + 60_000;
        String state = "";
        while (System.currentTimeMillis() < deadline) {
            for (Process p : daemons) {
                if (!p.isAlive()) throw new IllegalStateException("a Slurm daemon exited (" + p.exitValue() + ")\n" + logs());
            }
            try {
                state = client("sinfo", "-h", "-o", "%T").strip();
                if (state.equals("idle")) return;
            } catch (IllegalStateException notYet) {
                state = notYet.getMessage();
            }
            Thread.sleep(300);
        }
        throw new IllegalStateException("the Slurm node is not idle after 60 s (" + state + ")\n" + logs());
    }

    /** The environment every Slurm client of this cluster needs. */
    Map<String, String> env() {
        return Map.of("SLURM_CONF", conf.toString());
    }

    /** A Slurm client command (srun, scontrol, scancel, squeue) against this cluster, its output; fails on exit != 0. */
    String client(String... cmd) throws IOException, InterruptedException {
        return run(List.of(cmd), env());
    }

    ProcessBuilder clientProcess(List<String> cmd) {
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().putAll(env());
        return pb;
    }

    /** A job's fields as {@code scontrol show job -o ID} gives them (Key=Value, one line). */
    Map<String, String> job(String id) throws IOException, InterruptedException {
        Map<String, String> fields = new java.util.LinkedHashMap<>();
        for (String kv : client("scontrol", "show", "job", "-o", id).strip().split(" ")) {
            int eq = kv.indexOf('=');
            if (eq > 0) fields.putIfAbsent(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return fields;
    }

    String logs() {
        StringBuilder b = new StringBuilder();
        for (String f : List.of("munge/munged.log", "slurmctld.log", "slurmd.log", "munged.out", "slurmctld.out", "slurmd.out")) {
            try {
                List<String> lines = Files.readAllLines(dir.resolve(f));
                b.append("--- ").append(f).append('\n')
                        .append(String.join("\n", lines.subList(Math.max(0, lines.size() - 15), lines.size()))).append('\n');
            } catch (IOException absent) {
                // not written
            }
        }
        return b.toString();
    }

    private void daemon(String name, List<String> cmd) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(dir.resolve(name + ".out").toFile());
        pb.environment().putAll(env());
        daemons.add(pb.start());
    }

    boolean daemonsAlive() {
        return daemons.stream().anyMatch(Process::isAlive);
    }

    /** Stops slurmd, slurmctld and munged (in that order: the clients of munge first) and removes the directory. */
    @Override
    public void close() throws Exception {
        for (Process p : daemons.reversed()) {
            p.destroy();
            if (!p.waitFor(20, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
        }
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path f : files.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(f);
        }
    }

    private static void awaitFile(Path f, String what) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 15_000;
        while (!Files.exists(f)) {
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException(what + " did not create " + f);
            Thread.sleep(100);
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    static String run(List<String> cmd, Map<String, String> env) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().putAll(env);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException(String.join(" ", cmd) + ": no answer in 60 s");
        }
        if (p.exitValue() != 0) throw new IllegalStateException(String.join(" ", cmd) + " (exit " + p.exitValue() + "): " + out.strip());
        return out;
    }
}
