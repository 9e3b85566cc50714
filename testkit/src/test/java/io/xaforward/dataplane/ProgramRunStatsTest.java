package io.xaforward.dataplane;

import io.xaforward.testkit.ProgTestRun;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The kernel's per-program run statistics, read through bpf_obj_get_info_by_fd, count the gateway's runs. A kernel
 * that refuses to turn them on (both the BPF_ENABLE_STATS command and the sysctl) has nothing equivalent to count
 * with: the test is then skipped with the kernel's answer, and `./xaf test` lists it among the skips at its end.
 */
class ProgramRunStatsTest {
    @Test
    void countsEveryRunWhileEnabled() throws Exception {
        byte[] arp = TestFrames.eth(42, new byte[] {-1, -1, -1, -1, -1, -1}, TestFrames.mac(1), 0x0806).put(new byte[28]).array();
        AutoCloseable enabled;
        try {
            enabled = ProgramRunStats.enable();
        } catch (BpfException refused) {
            Assumptions.abort("kernel capability missing: BPF run-time statistics (" + refused.getMessage() + ")");
            return;
        }
        try (XafDataplane dp = XafDataplane.load(); AutoCloseable stats = enabled) {
            int id = ProgramRunStats.programId(dp.programFd());
            assertTrue(id > 0, "program id " + id);
            ProgramRunStats.Reading before = ProgramRunStats.read(id);
            for (int i = 0; i < 10; i++) ProgTestRun.run(dp.programFd(), arp, 1, 0);
            ProgramRunStats.Reading delta = ProgramRunStats.read(id).minus(before);
            assertEquals(10, delta.runs(), "one run per test run");
            assertTrue(delta.runTimeNs() > 0 && delta.nsPerRun() < 1_000_000, "run time " + delta);
            assertEquals(ProgramRunStats.readFd(dp.programFd()).runs(), ProgramRunStats.read(id).runs(), "by fd = by id");
        }
    }

    @Test
    void unknownProgramIdIsAClearError() {
        BpfException e = assertThrows(BpfException.class, () -> ProgramRunStats.read(Integer.MAX_VALUE));
        assertEquals(2, e.errno(), e.getMessage());
    }
}
