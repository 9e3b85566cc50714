package io.xaforward.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code xaf model}: a table and a plot for a good cluster file, one clear line for a bad one. */
class ModelCommandTest {

    static final Path BENCH = Path.of("..", "docs", "bench").toAbsolutePath().normalize();

    record Run(int rc, String out, String err) {}

    static Run run(String... args) {
        CommandLine cl = Main.commandLine();
        StringWriter err = new StringWriter();
        cl.setErr(new PrintWriter(err, true));
        PrintStream saved = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true));
        try {
            int rc = cl.execute(args);
            return new Run(rc, out.toString(), err.toString());
        } finally {
            System.setOut(saved);
        }
    }

    static String calibration() {
        return "calibration:\n  forward: " + BENCH.resolve("forward.json") + "\n  allreduce: " + BENCH.resolve("allreduce.json")
                + "\n  train: " + BENCH.resolve("train.json") + "\n";
    }

    @Test
    void tableAndPlot(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("c.yaml");
        Files.writeString(file, "datacenters: 2\nhosts_per_dc: 4\nwan_gbps: 10\nwan_rtt_ms: 10\ngradient_mb: 100\ncompute_ms: 50\n"
                + "gateway: {modes: [xdp, relay], cores: 2}\n" + calibration());
        Run r = run("model", "--cluster", file.toString(), "--out", dir.resolve("out").toString());
        assertEquals(0, r.rc(), r.err());
        assertTrue(r.out().contains("| xdp |") && r.out().contains("| relay |"), r.out());
        assertTrue(r.out().contains("bound by"), r.out());
        assertTrue(Files.size(dir.resolve("out").resolve("c.png")) > 1000);
        assertTrue(Files.readString(dir.resolve("out").resolve("c.md")).contains("| relay |"));

        Run grid = run("model", "--cluster", file.toString(), "--vary", "wan_rtt_ms=1,30", "--vary", "gateway.cores=1,8");
        assertEquals(0, grid.rc(), grid.err());
        assertEquals(8, grid.out().lines().filter(l -> l.matches("\\| [0-9]+ \\| [0-9]+ \\| (xdp|relay) .*")).count(), grid.out());
    }

    @Test
    void badInputIsOneClearLine(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("bad.yaml");
        Files.writeString(file, "datacenters: 2\nhosts_per_dc: 4\ngradient_mb: 100\nwan_gbs: 10\n" + calibration());
        Run r = run("model", "--cluster", file.toString());
        assertEquals(1, r.rc());
        assertTrue(r.err().contains("bad.yaml: top level: unknown key 'wan_gbs' (allowed: "), r.err());
        assertEquals(1, r.err().lines().count(), r.err());

        Run missing = run("model", "--cluster", dir.resolve("nope.yaml").toString());
        assertEquals(1, missing.rc());
        assertTrue(missing.err().contains("does not exist"), missing.err());

        Path noTestbed = dir.resolve("c.yaml");
        Files.writeString(noTestbed, "datacenters: 2\nhosts_per_dc: 4\ngradient_mb: 100\n" + calibration());
        Run v = run("model", "--cluster", noTestbed.toString(), "--validate");
        assertEquals(1, v.rc());
        assertTrue(v.err().contains("testbed: allreduce or testbed: train"), v.err());

        Run vary = run("model", "--cluster", noTestbed.toString(), "--vary", "wan_rtt_ms");
        assertEquals(1, vary.rc());
        assertTrue(vary.err().contains("expected KEY=V1,V2"), vary.err());

        Run noCluster = run("model");
        assertEquals(2, noCluster.rc());
        assertTrue(noCluster.err().contains("Missing required option: '--cluster=FILE'"), noCluster.err());
    }
}
