package io.xaforward.transport;

import io.xaforward.dataplane.sys.NetworkNamespace;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * A test network namespace (unique name, deleted by {@link #close}, which takes its veths with it) plus shell
 * helpers for the AF_XDP port tests.
 */
final class XskTestNet implements AutoCloseable {
    final String name = "xxskp" + Integer.toHexString(new Random().nextInt(0x10000, 0x100000));

    XskTestNet() {
        run("ip", "netns", "add", name);
    }

    /** Adds veth pair {@code a <-> b} with the given MACs, both up, TX checksum offload off on both ends. */
    XskTestNet veth(String a, String macA, String b, String macB) {
        run("ip", "-n", name, "link", "add", a, "address", macA, "type", "veth", "peer", "name", b, "address", macB);
        for (String dev : new String[] {a, b}) {
            run("ip", "netns", "exec", name, "ethtool", "-K", dev, "tx", "off");
            run("ip", "-n", name, "link", "set", dev, "up");
        }
        return this;
    }

    <T> T call(Callable<T> task) { return NetworkNamespace.call(name, task); }

    String exec(String... cmd) {
        String[] full = new String[cmd.length + 4];
        full[0] = "ip";
        full[1] = "netns";
        full[2] = "exec";
        full[3] = name;
        System.arraycopy(cmd, 0, full, 4, cmd.length);
        return run(full);
    }

    /** One field of the "Udp:" lines of /proc/net/snmp inside the namespace. */
    long udpCounter(String field) {
        List<String> udp = exec("cat", "/proc/net/snmp").lines().filter(l -> l.startsWith("Udp:")).toList();
        List<String> names = List.of(udp.get(0).split("\\s+"));
        return Long.parseLong(udp.get(1).split("\\s+")[names.indexOf(field)]);
    }

    @Override
    public void close() { run("ip", "netns", "del", name); }

    static String run(String... cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            if (!p.waitFor(20, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("timed out: " + String.join(" ", cmd));
            }
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (p.exitValue() != 0) throw new AssertionError(String.join(" ", cmd) + " exited " + p.exitValue() + ": " + out);
            return out;
        } catch (IOException e) {
            throw new AssertionError("cannot run " + String.join(" ", cmd), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted: " + String.join(" ", cmd), e);
        }
    }
}
