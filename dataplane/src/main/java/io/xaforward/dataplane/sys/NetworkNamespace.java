package io.xaforward.dataplane.sys;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;

/**
 * Runs code inside a named network namespace (one created by {@code ip netns add}).
 *
 * <p>setns(2) switches only the calling OS thread, and sockets keep the namespace they were created in. So a
 * dedicated platform thread enters the namespace, runs the task (which may create sockets and hand them out),
 * and ends; the rest of the JVM is untouched. Never use a virtual thread for this.
 */
public final class NetworkNamespace {
    private NetworkNamespace() {}

    public static Path path(String name) {
        return Path.of("/var/run/netns", name);
    }

    /** Runs {@code task} on a new thread inside namespace {@code name} and returns its result. */
    public static <T> T call(String name, Callable<T> task) {
        Path p = path(name);
        if (!Files.exists(p)) {
            throw new IllegalArgumentException("network namespace '" + name + "' does not exist (" + p + ")");
        }
        FutureTask<T> future = new FutureTask<>(() -> {
            enter(name, p);
            return task.call();
        });
        Thread t = Thread.ofPlatform().name("netns-" + name).daemon(true).start(future);
        try {
            return future.get();
        } catch (InterruptedException e) {
            t.interrupt();
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running in namespace " + name, e);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof RuntimeException r) throw r;
            if (c instanceof Error err) throw err;
            throw new IllegalStateException("task in namespace " + name + " failed: " + c, c);
        }
    }

    /**
     * Starts a long-running task on a platform thread inside namespace {@code name}; the thread stays there.
     */
    public static Thread start(String name, String threadName, Runnable task) {
        Path p = path(name);
        if (!Files.exists(p)) {
            throw new IllegalArgumentException("network namespace '" + name + "' does not exist (" + p + ")");
        }
        return Thread.ofPlatform().name(threadName).daemon(true).start(() -> {
            enter(name, p);
            task.run();
        });
    }

    /** Moves the calling OS thread into the namespace at {@code p}. */
    private static void enter(String name, Path p) {
        int fd = Syscalls.open(p.toString(), Syscalls.O_RDONLY | Syscalls.O_CLOEXEC);
        if (fd < 0) throw new SyscallException("open(" + p + ")", Syscalls.errno());
        try {
            if (Syscalls.setns(fd, Syscalls.CLONE_NEWNET) < 0) {
                int e = Syscalls.errno();
                throw new SyscallException("setns(" + name + ")" + (e == 1 ? ": needs root (CAP_SYS_ADMIN)" : ""), e);
            }
        } finally {
            Syscalls.close(fd);
        }
    }
}
