package io.xaforward.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code --gateway-cpu} of the three benches: a bad budget is one clear line, before anything is set up. */
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
        assertTrue(err.toString().contains("unknown peer 'ddp-nccl' (known: xaf, ddp-gloo)"), err.toString());
    }
}
