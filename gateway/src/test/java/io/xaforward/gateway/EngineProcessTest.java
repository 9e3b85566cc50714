package io.xaforward.gateway;

import io.xaforward.gateway.afxdp.AfXdpGatewayMain;
import io.xaforward.gateway.relay.RelayGatewayMain;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Java engines start as one template: bad arguments exit 2; a config or engine that cannot start is one line, exit 1. */
class EngineProcessTest {
    record Exit(int status, String stderr) {}

    private static Exit run(Class<?> main, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), main.getName()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        p.getOutputStream().close();
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "exits");
        return new Exit(p.exitValue(), err);
    }

    @Test
    void badArgumentsExit2WithTheUsage() throws Exception {
        Exit e = run(AfXdpGatewayMain.class);
        assertEquals(2, e.status(), e.stderr());
        assertTrue(e.stderr().contains("usage: AfXdpGatewayMain --config FILE"), e.stderr());
    }

    @Test
    void aMissingConfigIsOneLineAndExit1(@TempDir Path dir) throws Exception {
        Exit e = run(RelayGatewayMain.class, "--config", dir.resolve("none.yaml").toString());
        assertEquals(1, e.status(), e.stderr());
        assertTrue(e.stderr().contains("xaf relay: cannot start: " + dir.resolve("none.yaml") + ": file not found\n"), e.stderr());
    }

    @Test
    void anEngineThatCannotOpenItsPortsIsOneLineAndExit1(@TempDir Path dir) throws Exception {
        Path config = dir.resolve("gw.yaml");
        Files.writeString(config, "metrics: off\nports:\n  - {interface: xafnosuch0, form: ipv4}\nroutes: []\n");
        Exit e = run(RelayGatewayMain.class, "--config", config.toString());
        assertEquals(1, e.status(), e.stderr());
        assertTrue(e.stderr().contains("xaf relay: cannot start: interface xafnosuch0 does not exist"), e.stderr());
    }
}
