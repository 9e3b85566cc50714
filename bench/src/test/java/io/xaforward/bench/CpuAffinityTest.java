package io.xaforward.bench;

import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

class CpuAffinityTest {
    @Test
    void pinsAThreadAndRestoresItsMask() throws Exception {
        // a fresh platform thread, so the test runner's own threads keep their masks whatever happens
        CompletableFuture<Void> done = new CompletableFuture<>();
        Thread.ofPlatform().start(() -> {
            try {
                byte[] original = CpuAffinity.get(0);
                int cpu = CpuAffinity.cpuCount() - 1;
                long tid = ProcessHandle.current().pid(); // the main thread: pin it through its id, then restore
                byte[] mainBefore = CpuAffinity.get(tid);
                Map<Long, byte[]> previous = CpuAffinity.pin(Map.of(tid, cpu));
                assertArrayEquals(CpuAffinity.maskOf(cpu), CpuAffinity.get(tid));
                CpuAffinity.restore(previous);
                assertArrayEquals(mainBefore, CpuAffinity.get(tid));
                CpuAffinity.pinCurrentThread(0);
                assertArrayEquals(CpuAffinity.maskOf(0), CpuAffinity.get(0));
                assertFalse(java.util.Arrays.equals(new byte[original.length], original));
                done.complete(null);
            } catch (Throwable t) {
                done.completeExceptionally(t);
            }
        });
        done.get(10, TimeUnit.SECONDS);
    }

    @Test
    void threadsThatDoNotExistAreSkipped() {
        assertNull(CpuAffinity.get(Integer.MAX_VALUE - 1));
        assertFalse(CpuAffinity.set(Integer.MAX_VALUE - 1, CpuAffinity.maskOf(0)));
        assertThrows(IllegalArgumentException.class, () -> CpuAffinity.maskOf(-1));
    }
}
