package io.xaforward.testkit;

import io.xaforward.dataplane.BpfException;
import io.xaforward.dataplane.XafDataplane;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** A run the kernel refuses must say why: the errno in a {@link BpfException} (root, as in CI). */
class ProgTestRunTest {

    @Test
    void testRunOnUnknownIfindexOrQueueFails() {
        try (XafDataplane dp = XafDataplane.load()) {
            byte[] frame = new byte[64];
            BpfException noDev = assertThrows(BpfException.class, () -> ProgTestRun.run(dp.programFd(), frame, 999_999, 0));
            assertEquals(19, noDev.errno(), noDev.getMessage());
            BpfException noQueue = assertThrows(BpfException.class, () -> ProgTestRun.run(dp.programFd(), frame, 1, 9));
            assertEquals(22, noQueue.errno(), noQueue.getMessage());
        }
    }
}
