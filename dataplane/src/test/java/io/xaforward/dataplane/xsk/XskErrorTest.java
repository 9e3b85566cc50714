package io.xaforward.dataplane.xsk;

import io.xaforward.dataplane.NetNs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Bad input fails with a message that says what and why, and leaves no file descriptor behind. */
class XskErrorTest {
    private static final String A = "xa", B = "xb";

    private static NetNs ns;

    @BeforeAll
    static void setUp() { ns = NetNs.create("xafxsk" + ProcessHandle.current().pid() % 100000 + "err", n -> n.disableIpv6().vethPair(A, B)); }

    @AfterAll
    static void tearDown() { if (ns != null) ns.close(); }

    private static long openFds() {
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static XskException openFails(String ifname, int queue, XskConfig cfg) {
        // Once unmeasured: the first attempt may load classes, and the JVM keeps the jar it read them from open.
        ns.call(() -> assertThrows(XskException.class, () -> XskSocket.open(ifname, queue, cfg)));
        long before = openFds();
        XskException e = ns.call(() -> assertThrows(XskException.class, () -> XskSocket.open(ifname, queue, cfg)));
        assertEquals(before, openFds(), "file descriptors leaked by a failed open: " + e.getMessage());
        return e;
    }

    @Test
    void queueTheDeviceDoesNotHave() {
        XskException e = openFails(B, 3, XskConfig.small());
        assertEquals(22, e.errno());
        assertEquals("AF_XDP bind('xb', queue 3, copy mode): Invalid argument (errno 22) - the device has no queue 3", e.getMessage());
    }

    @Test
    void missingInterface() {
        XskException e = openFails("nope0", 0, XskConfig.small());
        assertTrue(e.getMessage().startsWith("AF_XDP socket('nope0', queue 0): no interface 'nope0' in this network namespace"), e.getMessage());
    }

    @Test
    void zeroCopyOnVethIsRefusedClearly() {
        XskException e = openFails(B, 0, XskConfig.small().withZeroCopy(true));
        assertTrue(e.getMessage().contains("does not support zero-copy AF_XDP"), e.getMessage());
        assertTrue(e.getMessage().contains("(errno " + e.errno() + ")"), e.getMessage());
    }

    @Test
    void ringSizesMustBePowersOfTwo() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new XskConfig(1000, 256, 256, 256, 256, 256, false));
        assertEquals("rxRingSize 1000 is not a power of two in 1..1048576 (the kernel masks ring indices with size-1)", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> XskConfig.small().withTxRings(0));
        assertThrows(IllegalArgumentException.class, () -> XskConfig.small().withRxRings(3000));
        IllegalArgumentException frames = assertThrows(IllegalArgumentException.class,
                () -> new XskConfig(256, 256, 256, 256, 512, 256, false));
        assertTrue(frames.getMessage().contains("rxFrames 512"), frames.getMessage());
    }

    @Test
    void aGoodSocketClosesEverything() {
        ns.call(() -> { // once unmeasured, as in openFails
            XskSocket.open(B, 0, XskConfig.small()).close();
            return null;
        });
        long before = openFds();
        ns.call(() -> {
            XskSocket s = XskSocket.open(B, 0, XskConfig.small());
            assertEquals(before + 2, openFds(), "the socket and its wake-up eventfd while open");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> s.claimTx(4000));
            assertTrue(e.getMessage().contains("4000"), e.getMessage());
            s.close();
            s.close(); // idempotent
            return null;
        });
        assertEquals(before, openFds());
    }

    @Test
    void secondSocketOnTheSameQueueIsBusy() {
        ns.call(() -> {
            try (XskSocket first = XskSocket.open(B, 0, XskConfig.small())) {
                XskException e = assertThrows(XskException.class, () -> XskSocket.open(B, 0, XskConfig.small()));
                assertTrue(e.getMessage().startsWith("AF_XDP bind('xb', queue 0, copy mode): "), e.getMessage());
                assertTrue(e.getMessage().contains("already has an AF_XDP socket"), e.getMessage());
            }
            return null;
        });
    }
}
