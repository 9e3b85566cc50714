package io.xaforward.dataplane;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs a command for a test, with a timeout; returns stdout+stderr, failing loudly on a non-zero exit. Shared by the
 * tests of every dataplane package, so that namespace, compiler and {@code ip} calls all fail the same clear way.
 */
public final class Sh {
    private Sh() {}

    public record Result(int exit, String output) {}

    public static Result exec(List<String> cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("timed out: " + cmd);
            }
            return new Result(p.exitValue(), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new AssertionError("cannot run " + cmd, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted: " + cmd, e);
        }
    }

    public static String run(String... cmd) {
        Result r = exec(List.of(cmd));
        if (r.exit() != 0) throw new AssertionError(String.join(" ", cmd) + " exited " + r.exit() + ": " + r.output());
        return r.output();
    }
}
