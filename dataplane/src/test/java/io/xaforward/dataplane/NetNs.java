package io.xaforward.dataplane;

import io.xaforward.dataplane.sys.NetworkNamespace;

import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.Consumer;

/**
 * A network namespace made by a test ({@code ip netns add}) and removed by {@link #close}, which takes its interfaces
 * with it. The one namespace fixture of the dataplane tests: code runs inside it through {@link #call}, i.e. on a
 * thread of its own via {@link NetworkNamespace}, so the test thread and the rest of the JVM stay where they are.
 */
public final class NetNs implements AutoCloseable {
    public final String name;

    private NetNs(String name) {
        this.name = name;
        Sh.exec(List.of("ip", "netns", "del", name)); // leftover of a killed run; failure is fine
        Sh.run("ip", "netns", "add", name);
    }

    /** Creates namespace {@code name} and runs {@code setup} on it; if setup fails, the namespace is removed again. */
    public static NetNs create(String name, Consumer<NetNs> setup) {
        NetNs ns = new NetNs(name);
        try {
            setup.accept(ns);
            return ns;
        } catch (RuntimeException | Error e) {
            ns.close();
            throw e;
        }
    }

    /** Adds the veth pair {@code a <-> b} and sets both ends up. */
    public NetNs vethPair(String a, String b) {
        ip("link", "add", a, "type", "veth", "peer", "name", b);
        ip("link", "set", a, "up");
        ip("link", "set", b, "up");
        return this;
    }

    /** Sets interface {@code dev} up. */
    public NetNs up(String dev) {
        ip("link", "set", dev, "up");
        return this;
    }

    /** Turns IPv6 off for every interface, present and future: no stray neighbour discovery frames on the wire. */
    public NetNs disableIpv6() {
        Sh.run("ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1");
        Sh.run("ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1");
        return this;
    }

    /** Runs {@code ip -n NAME args...}. */
    public String ip(String... args) {
        String[] cmd = new String[args.length + 3];
        cmd[0] = "ip"; cmd[1] = "-n"; cmd[2] = name;
        System.arraycopy(args, 0, cmd, 3, args.length);
        return Sh.run(cmd);
    }

    /** Runs {@code task} on a platform thread inside the namespace and returns its result. */
    public <T> T call(Callable<T> task) { return NetworkNamespace.call(name, task); }

    @Override
    public void close() {
        Sh.run("ip", "netns", "del", name);
    }
}
