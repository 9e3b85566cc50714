package io.xaforward.cli;

import io.xaforward.cluster.TrainJobCodec;
import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.cluster.deploy.JoinSpec;
import io.xaforward.collective.Algorithm;
import io.xaforward.collective.WireDtype;
import io.xaforward.testbed.Netns;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How a rank joins its job is declared once ({@link JoinOptions}, with {@link CollectiveOptions}) and made into one
 * {@link JoinSpec}, for xaf worker and xaf agent alike: the same options with the same help, the agent's collective
 * settings as complete as the worker's (pacing, every wire format), and no trainer faked for the agent.
 */
class JoinOptionsTest {
    @TempDir
    Path dir;

    /** The options both commands take from the one declaration; each must be there, described alike. */
    private static final List<String> JOIN = List.of("--job", "--world", "--rank", "--interface", "--form", "--token",
            "--token-file", "--cluster", "--etcd", "--wire-security", "--secret-file", "--op-timeout", "--start-timeout",
            "--flows", "--algorithm", "--bucket-mb", "--wire-dtype", "--pacing-mbps");

    private static OptionSpec option(String command, String name) {
        OptionSpec o = Main.commandLine().getSubcommands().get(command).getCommandSpec().findOption(name);
        assertNotNull(o, "xaf " + command + " " + name);
        return o;
    }

    @Test
    void workerAndAgentShareEveryJoinOptionWithOneHelpText() {
        for (String name : JOIN) {
            OptionSpec worker = option("worker", name), agent = option("agent", name);
            assertEquals(String.join(" ", worker.description()), String.join(" ", agent.description()), name);
            assertEquals(worker.defaultValue(), agent.defaultValue(), name);
        }
    }

    @Test
    void theAgentsHelpListsEveryWireFormatItsConverterAccepts() throws Exception {
        String help = Main.commandLine().getSubcommands().get("agent").getUsageMessage(CommandLine.Help.Ansi.OFF);
        for (WireDtype d : WireDtype.values()) {
            assertTrue(help.contains(d.configName()), d.configName() + " in xaf agent --help:\n" + help);
            assertEquals(d, agent("--wire-dtype", d.configName()).collective().wireDtype());
        }
    }

    /** xaf agent as rank 0 of a two-rank cluster file, with {@code args} after what every agent needs. */
    private JoinSpec agent(String... args) throws Exception {
        Path cluster = dir.resolve("cluster.yaml");
        Files.writeString(cluster, SampleClusterFiles.ONE_DC_TWO_RANKS);
        AgentCommand a = new AgentCommand();
        a.environment = Map.of();
        List<String> all = new java.util.ArrayList<>(List.of("--rank", "0", "--interface", "eth1", "--cluster",
                cluster.toString(), "--token", "0x47", "--wire-security", "crc32c"));
        all.addAll(List.of(args));
        new CommandLine(a).parseArgs(all.toArray(String[]::new));
        return a.join.spec(a.join.identity(a.environment));
    }

    @Test
    void theAgentsSpecCarriesPacingTimeoutsAndCollectives() throws Exception {
        JoinSpec spec = agent("--pacing-mbps", "100", "--op-timeout", "33", "--start-timeout", "44", "--flows", "2",
                "--algorithm", "ring", "--bucket-mb", "2");
        assertEquals(100_000_000 / 8, spec.collective().pacingBytesPerSecond(), "the agent no longer drops pacing");
        assertEquals(Duration.ofSeconds(33), spec.opTimeout());
        assertEquals(Duration.ofSeconds(44), spec.startTimeout());
        assertEquals(2, spec.flows());
        assertEquals(Algorithm.RING, spec.collective().algorithm());
        assertEquals(2L << 20, spec.collective().bucketBytes());
        assertEquals(0x47, spec.token());
        assertEquals(List.of(0, 2, 7), List.of(spec.rank(), spec.worldSize(), spec.jobId()));
        var e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> agent("--op-timeout", "0"));
        assertEquals("--op-timeout must be at least 1 second, was 0", e.getMessage());
    }

    /** xaf train --op-timeout is the Java workers' too: it reaches the job spec and the workers' job.properties. */
    @Test
    void trainsOperationTimeoutReachesItsWorkers() throws Exception {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        TrainCommand cmd = new TrainCommand();
        new CommandLine(cmd).parseArgs("--preset", "tiny", "--data", Files.writeString(dir.resolve("corpus.txt"),
                "text ".repeat(2000)).toString(), "--work-dir", dir.resolve("work").toString(), "--op-timeout", "33");
        TrainJobSpec spec = cmd.spec();
        assertEquals(Duration.ofSeconds(33), spec.opTimeout());
        Path file = dir.resolve("job.properties");
        TrainJobCodec.write(spec, file);
        assertEquals(Duration.ofSeconds(33), TrainJobCodec.read(file).opTimeout());
        assertEquals("120", option("train", "--op-timeout").defaultValue(), "the timeout every worker had before");
    }
}
