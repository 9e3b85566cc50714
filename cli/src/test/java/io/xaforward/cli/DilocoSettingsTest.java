package io.xaforward.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static io.xaforward.cli.EarlyErrorsTest.failsEarly;

/**
 * Malformed DiLoCo settings of {@code xaf train} end the command before anything starts: exit status 1, one
 * {@code xaf:} line naming the setting, no namespace and no work directory (EarlyErrorsTest's check). Needs root.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class DilocoSettingsTest {
    @TempDir
    Path dir;

    @Test
    void malformedDilocoSettingsAreRefusedBeforeAnyNamespace() throws Exception {
        failsEarly("unknown sync mode 'lockstep'", "train", "--sync", "lockstep");
        failsEarly("--sync-every must be at least 1, was 0", "train", "--sync", "diloco", "--sync-every", "0");
        failsEarly("--fragments must be at least 1", "train", "--sync", "diloco", "--fragments", "0");
        failsEarly("more than the 2 layers of preset tiny", "train", "--preset", "tiny", "--sync", "diloco",
                "--sync-every", "10", "--fragments", "3");
        failsEarly("--fragments 5 is more than --sync-every 4", "train", "--sync", "diloco", "--sync-every", "4",
                "--fragments", "5");
        failsEarly("--fragment-sync-delay must be in [0, --sync-every)", "train", "--sync", "diloco", "--sync-every",
                "4", "--fragment-sync-delay", "4");
        failsEarly("--outer-momentum must be in [0, 1)", "train", "--sync", "diloco", "--outer-momentum", "1");
        failsEarly("--outer-lr must be a positive number", "train", "--sync", "diloco", "--outer-lr", "0");
        failsEarly("unknown outer dtype 'int3'", "train", "--sync", "diloco", "--outer-dtype", "int3");

        Path oneDc = dir.resolve("one-dc.yaml");
        Files.writeString(oneDc, """
                name: one-dc
                datacenters:
                  - name: a
                    form: ipv4
                    hosts: 2
                gateways: []
                """);
        failsEarly("--sync diloco needs at least two data centers, the topology has 1", "train", "--topology",
                oneDc.toString(), "--sync", "diloco");
    }
}
