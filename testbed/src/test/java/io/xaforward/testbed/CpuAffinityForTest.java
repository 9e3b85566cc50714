package io.xaforward.testbed;

/** Pins the calling thread through taskset (the tests need nothing faster). */
final class CpuAffinityForTest {
    private CpuAffinityForTest() {}

    static void pin(int cpu) {
        long tid = ProcessHandle.current().pid();
        try {
            // the calling thread's id: /proc/thread-self
            String self = java.nio.file.Files.readSymbolicLink(java.nio.file.Path.of("/proc/thread-self")).getFileName().toString();
            tid = Long.parseLong(self);
            Process p = new ProcessBuilder("taskset", "-p", "-c", Integer.toString(cpu), Long.toString(tid)).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            if (p.waitFor() != 0) throw new IllegalStateException("taskset failed for thread " + tid);
        } catch (java.io.IOException | InterruptedException e) {
            throw new IllegalStateException("cannot pin thread " + tid, e);
        }
    }
}
