package io.xaforward.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * {@code --gateway-cpu} of the three benches, and the other words of {@code xaf bench train} (configurations, peers,
 * {@code --sync} and DiLoCo's settings): a bad one is one clear line, before anything is set up.
 */
class GatewayCpuOptionTest {

    @Test
    void badBudgetsAreRefusedBeforeSetup() {
        for (String bench : new String[]{"forward", "train", "allreduce"}) {
            for (String bad : new String[]{"2%", "150%", "lots"}) {
                CommandLine cl = Main.commandLine();
                StringWriter err = new StringWriter();
                cl.setErr(new PrintWriter(err, true));
                int rc = cl.execute("bench", bench, "--gateway-cpu", bad, "--out", "/nonexistent/never-created");
                assertEquals(1, rc, bench + " " + bad + ": " + err);
                assertTrue(err.toString().contains("gateway CPU budget '" + bad + "'"), bench + " " + bad + ": " + err);
            }
        }
    }

    @Test
    void unknownTrainingConfigurationIsRefusedBeforeSetup() {
        CommandLine cl = Main.commandLine();
        StringWriter err = new StringWriter();
        cl.setErr(new PrintWriter(err, true));
        int rc = cl.execute("bench", "train", "--configs", "gateway-bound,wan-bound", "--out", "/nonexistent/never-created");
        assertEquals(1, rc, err.toString());
        assertTrue(err.toString().contains("unknown configuration 'wan-bound' (known: comm-bound, gateway-bound, edge)"), err.toString());
    }

    @Test
    void unknownTrainingPeerIsRefusedBeforeSetup() {
        CommandLine cl = Main.commandLine();
        StringWriter err = new StringWriter();
        cl.setErr(new PrintWriter(err, true));
        int rc = cl.execute("bench", "train", "--peers", "xaf,ddp-nccl", "--out", "/nonexistent/never-created");
        assertEquals(1, rc, err.toString());
        assertTrue(err.toString().contains("unknown peer 'ddp-nccl' (known: xaf, ddp-gloo, diloco-gloo, pytorch-xaf)"), err.toString());
    }

    @Test
    void unknownOrRepeatedSyncModeIsRefusedBeforeSetup() {
        assertRefused("unknown sync mode", "--sync", "ddp,fsdp");
        assertRefused("--sync names a mode twice", "--sync", "diloco,diloco");
    }

    @Test
    void malformedDilocoSettingsAreRefusedBeforeSetup() {
        assertRefused("--sync-every must be at least 1, was 0", "--sync", "ddp,diloco", "--sync-every", "0");
        assertRefused("--outer-momentum must be in [0, 1), was 1.0", "--peers", "diloco-gloo", "--outer-momentum", "1");
        assertRefused("unknown outer dtype 'fp8'", "--peers", "xaf,diloco-gloo", "--outer-dtype", "fp8");
    }

    private static void assertRefused(String message, String... options) {
        CommandLine cl = Main.commandLine();
        StringWriter err = new StringWriter();
        cl.setErr(new PrintWriter(err, true));
        java.util.List<String> args = new java.util.ArrayList<>(java.util.List.of("bench", "train"));
        args.addAll(java.util.List.of(options));
        args.addAll(java.util.List.of("--out", "/nonexistent/never-created"));
        int rc = cl.execute(args.toArray(String[]::new));
        assertEquals(1, rc, err.toString());
        assertTrue(err.toString().contains(message), err.toString());
        assertTrue(!Files.exists(Path.of("/nonexistent/never-created")), "nothing was set up");
    }
}
