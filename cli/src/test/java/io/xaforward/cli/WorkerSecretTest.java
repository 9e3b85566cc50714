package io.xaforward.cli;

import io.xaforward.transport.JobSecret;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/** The job secret of {@code xaf worker} and {@code xaf launch}: required by the authenticated modes, never made up. */
class WorkerSecretTest {
    @TempDir
    Path dir;

    private List<String> worker(String... extra) {
        List<String> args = new ArrayList<>(List.of("--job", "7", "--world", "2", "--rank", "0", "--interface", "lo",
                "--form", "ipv4", "--token", "0x1234", "--data", dir.resolve("corpus.txt").toString(),
                "--checkpoint-dir", dir.resolve("ckpt").toString()));
        args.addAll(List.of(extra));
        return args;
    }

    /** Runs xaf ARGS in-process; returns its error output, its exit status in {@code rc[0]}. */
    private static String errorOf(int[] rc, List<String> args) {
        CommandLine cl = Main.commandLine();
        StringWriter err = new StringWriter();
        cl.setErr(new PrintWriter(err));
        rc[0] = cl.execute(args.toArray(String[]::new));
        return err.toString();
    }

    @Test
    void macWithoutASecretFileIsAnErrorNamingTheOption() {
        for (String source : List.of("--cluster=" + dir.resolve("cluster.yaml"), "--etcd=http://127.0.0.1:1")) {
            List<String> args = new ArrayList<>(List.of("worker"));
            args.addAll(worker(source));
            int[] rc = new int[1];
            String err = errorOf(rc, args);
            assertEquals(1, rc[0], err);
            assertTrue(err.contains("--wire-security mac needs the job secret") && err.contains("--secret-file"), err);

            args.addAll(List.of("--wire-security", "encrypt", "--secret-file", dir.resolve("missing.secret").toString()));
            err = errorOf(rc, args);
            assertEquals(1, rc[0], err);
            assertTrue(err.contains("missing.secret not found"), err);
        }
    }

    @Test
    void launchWritesAPrivateSecretAndPassesItToItsWorkers() throws Exception {
        List<String> args = new ArrayList<>(List.of("--local-ranks", "0", "--"));
        args.addAll(worker("--cluster", dir.resolve("cluster.yaml").toString()));
        PrintStream stdout = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        LaunchCommand launch = new LaunchCommand();
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            new CommandLine(launch).parseArgs(args.toArray(String[]::new));
            launch.provideSecret();
        } finally {
            System.setOut(stdout);
        }
        String text = out.toString(StandardCharsets.UTF_8);
        Path secret = dir.resolve("ckpt").resolve("job.secret").toAbsolutePath();
        assertTrue(text.contains("wrote a new job secret to " + secret), text);
        assertTrue(text.contains("every other host of the job needs the same file"), text);
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(secret)));
        JobSecret first = JobSecret.readFrom(secret);
        List<String> cmd = launch.command(0);
        assertEquals(secret.toString(), cmd.get(cmd.indexOf("--secret-file") + 1), cmd.toString());

        // A second launch (a resumed job) keeps the secret the other hosts hold copies of.
        LaunchCommand again = new LaunchCommand();
        new CommandLine(again).parseArgs(args.toArray(String[]::new));
        again.provideSecret();
        assertEquals(first, JobSecret.readFrom(secret));

        // Given a secret file, or crc32c, the launcher writes none.
        LaunchCommand plain = new LaunchCommand();
        List<String> crc = new ArrayList<>(args);
        crc.set(crc.indexOf("--checkpoint-dir") + 1, dir.resolve("ckpt2").toString());
        crc.addAll(List.of("--wire-security", "crc32c"));
        new CommandLine(plain).parseArgs(crc.toArray(String[]::new));
        plain.provideSecret();
        assertFalse(Files.exists(dir.resolve("ckpt2").resolve("job.secret")));
        assertFalse(plain.command(0).contains("--secret-file"));
    }
}
