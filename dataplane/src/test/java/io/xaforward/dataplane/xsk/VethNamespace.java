package io.xaforward.dataplane.xsk;

import io.xaforward.dataplane.sys.NetworkNamespace;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * A network namespace with one veth pair {@code xa <-> xb}, both up, IPv6 off (no stray neighbour discovery frames),
 * created for a test and deleted by {@link #close}, which takes the veths with it.
 */
final class VethNamespace implements AutoCloseable {
    static final String A = "xa", B = "xb";

    final String name;

    VethNamespace(String tag) {
        name = "xafxsk" + ProcessHandle.current().pid() % 100000 + tag;
        exec(List.of("ip", "netns", "del", name)); // leftover of a killed run; failure is fine
        run("ip", "netns", "add", name);
        try {
            run("ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1");
            run("ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1");
            run("ip", "-n", name, "link", "add", A, "type", "veth", "peer", "name", B);
            run("ip", "-n", name, "link", "set", A, "up");
            run("ip", "-n", name, "link", "set", B, "up");
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
    }

    /** Runs {@code task} on a platform thread inside the namespace. */
    <T> T call(Callable<T> task) { return NetworkNamespace.call(name, task); }

    @Override
    public void close() { run("ip", "netns", "del", name); }

    static String run(String... cmd) {
        String[] r = exec(List.of(cmd));
        if (!r[0].equals("0")) throw new AssertionError(String.join(" ", cmd) + " exited " + r[0] + ": " + r[1]);
        return r[1];
    }

    private static String[] exec(List<String> cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            if (!p.waitFor(20, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("timed out: " + cmd);
            }
            return new String[] {Integer.toString(p.exitValue()), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8)};
        } catch (IOException e) {
            throw new AssertionError("cannot run " + cmd, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted: " + cmd, e);
        }
    }
}
