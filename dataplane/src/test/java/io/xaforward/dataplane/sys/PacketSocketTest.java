package io.xaforward.dataplane.sys;

import io.xaforward.dataplane.NetNs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.*;

/** Raw frames of the identifier-native EtherType cross a veth pair inside a namespace this test creates. */
class PacketSocketTest {
    private static final String NS = "xaft" + ProcessHandle.current().pid() % 100000 + "ps";

    private static NetNs ns;

    @BeforeAll
    static void setUp() {
        ns = NetNs.create(NS, n -> n.vethPair("pa", "pb"));
    }

    @AfterAll
    static void tearDown() {
        if (ns != null) ns.close();
    }

    @Test
    void framesCrossVethByteIdentical() {
        NetworkNamespace.call(NS, () -> {
            try (PacketSocket a = new PacketSocket("pa", 0x0812); PacketSocket b = new PacketSocket("pb", 0x0812);
                 Arena arena = Arena.ofConfined()) {
                MemorySegment tx = arena.allocate(2048);
                MemorySegment rx = arena.allocate(2048);
                for (int n = 0; n < 50; n++) {
                    int len = 60 + n * 13;
                    for (int i = 0; i < len; i++) tx.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + n));
                    tx.set(ValueLayout.JAVA_BYTE, 0, (byte) 0xff); // broadcast destination so pb accepts it
                    for (int i = 1; i < 6; i++) tx.set(ValueLayout.JAVA_BYTE, i, (byte) 0xff);
                    tx.set(ValueLayout.JAVA_BYTE, 12, (byte) 0x08);
                    tx.set(ValueLayout.JAVA_BYTE, 13, (byte) 0x12);
                    a.send(tx, len);
                    int got = b.receive(rx, 2000);
                    assertEquals(len, got, "frame " + n);
                    assertEquals(-1, rx.asSlice(0, len).mismatch(tx.asSlice(0, len)), "frame " + n + " bytes");
                }
                assertEquals(-1, b.receive(rx, 50), "no extra frames");
            }
            return null;
        });
    }

    @Test
    void missingInterfaceIsAClearError() {
        SyscallException e = assertThrows(SyscallException.class,
                () -> NetworkNamespace.call(NS, () -> new PacketSocket("nope0", 0x0812)));
        assertTrue(e.getMessage().contains("'nope0' not found"), e.getMessage());
    }

    @Test
    void missingNamespaceIsAClearError() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> NetworkNamespace.call("no-such-ns-xaf", () -> null));
        assertTrue(e.getMessage().contains("no-such-ns-xaf"), e.getMessage());
    }
}
