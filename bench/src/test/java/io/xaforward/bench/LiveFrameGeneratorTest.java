package io.xaforward.bench;

import io.xaforward.dataplane.BpfException;
import io.xaforward.testbed.Netns;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The live-frames probe tells the truth about this kernel: where it says yes, the generator transmits out of a veth
 * (in a namespace made here); where it says no, the generator fails with the same errno. Builds of the same kernel
 * version answer differently (field notes), so both answers are expected; each is checked against what the kernel does.
 */
class LiveFrameGeneratorTest {

    @Test
    @Timeout(60)
    void theProbeAgreesWithTheGenerator() {
        assertTrue(Netns.isRoot(), "needs root (CI runs as root)");
        LiveFrameGenerator.Support support = LiveFrameGenerator.probe();
        System.out.println("live frames on " + System.getProperty("os.version") + ": "
                + (support.supported() ? "allowed" : "refused, " + support.reason()));
        assertEquals(support.supported(), support.reason().isEmpty(), support.reason());
        String ns = "xlfg" + Integer.toHexString(new Random().nextInt(0x1000, 0x10000));
        Netns.add(ns);
        try {
            Netns.exec(ns, "ip", "link", "add", "ga", "type", "veth", "peer", "name", "gb");
            Netns.exec(ns, "ip", "link", "set", "ga", "up");
            Netns.exec(ns, "ip", "link", "set", "gb", "up");
            byte[] frame = new byte[60];
            java.util.Arrays.fill(frame, 0, 6, (byte) 0xff);
            frame[12] = (byte) 0x88;
            frame[13] = (byte) 0xb5;
            if (support.supported()) {
                long sent = LiveFrameGenerator.run(ns, "ga", frame, 50_000_000L, 1024, 1, -1);
                assertTrue(sent >= 1024, "the probe said yes, the generator sent " + sent);
            } else {
                BpfException e = assertThrows(BpfException.class, () -> LiveFrameGenerator.run(ns, "ga", frame, 50_000_000L, 1024, 1, -1));
                assertEquals(support.errno(), e.errno(), e.getMessage());
            }
        } finally {
            Netns.delete(ns);
        }
    }
}
