package io.xaforward.dataplane;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * A network namespace made by a test ({@code ip netns add}), removed by {@link #close}. {@link #enter} moves the
 * calling thread into it with setns(2) (thread-scoped: the rest of the JVM stays where it is) and the returned
 * handle moves it back.
 */
final class NetNs implements AutoCloseable {
    private static final int CLONE_NEWNET = 0x40000000, O_RDONLY = 0;
    private static final Linker L = Linker.nativeLinker();
    private static final MethodHandle OPEN = L.downcallHandle(L.defaultLookup().findOrThrow("open"),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), Linker.Option.firstVariadicArg(2));
    private static final MethodHandle SETNS = L.downcallHandle(L.defaultLookup().findOrThrow("setns"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle CLOSE = L.downcallHandle(L.defaultLookup().findOrThrow("close"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT));

    final String name;

    NetNs(String name) {
        this.name = name;
        Sh.exec(java.util.List.of("ip", "netns", "del", name)); // leftover of a killed run
        Sh.run("ip", "netns", "add", name);
    }

    /** Runs {@code ip -n NAME args...}. */
    String ip(String... args) {
        String[] cmd = new String[args.length + 3];
        cmd[0] = "ip"; cmd[1] = "-n"; cmd[2] = name;
        System.arraycopy(args, 0, cmd, 3, args.length);
        return Sh.run(cmd);
    }

    private static int open(String path) throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            int fd = (int) OPEN.invokeExact(a.allocateFrom(path), O_RDONLY, 0);
            if (fd < 0) throw new AssertionError("open " + path + " failed");
            return fd;
        }
    }

    /** Moves this thread into the namespace until the returned handle is closed. */
    AutoCloseable enter() throws Throwable {
        int home = open("/proc/thread-self/ns/net");
        int target = open("/var/run/netns/" + name);
        try {
            if ((int) SETNS.invokeExact(target, CLONE_NEWNET) != 0) throw new AssertionError("setns into " + name + " failed");
        } finally {
            int ignored = (int) CLOSE.invokeExact(target);
        }
        return () -> {
            try {
                if ((int) SETNS.invokeExact(home, CLONE_NEWNET) != 0) throw new AssertionError("setns back failed");
                int ignored = (int) CLOSE.invokeExact(home);
            } catch (Throwable t) {
                throw new AssertionError(t);
            }
        };
    }

    @Override
    public void close() {
        Sh.run("ip", "netns", "del", name);
    }
}
