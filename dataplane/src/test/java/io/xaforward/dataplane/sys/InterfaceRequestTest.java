package io.xaforward.dataplane.sys;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Interface facts through ioctl and if_indextoname, checked against what the kernel shows in /sys for lo. */
class InterfaceRequestTest {
    @Test
    void loopbackNameMtuAndAddress() throws Exception {
        assertEquals("lo", Syscalls.ifIndexToName(Syscalls.ifNameToIndex("lo")));
        int sysMtu = Integer.parseInt(Files.readString(Path.of("/sys/class/net/lo/mtu")).strip());
        assertEquals(sysMtu, Syscalls.mtu("lo"));
        assertArrayEquals(new byte[6], Syscalls.hardwareAddress("lo"), "lo has an all-zero MAC");
    }

    @Test
    void missingInterfacesAreClearErrors() {
        SyscallException byIndex = assertThrows(SyscallException.class, () -> Syscalls.ifIndexToName(999_999));
        assertTrue(byIndex.getMessage().contains("no interface with ifindex 999999"), byIndex.getMessage());
        SyscallException byName = assertThrows(SyscallException.class, () -> Syscalls.mtu("xafnosuchif0"));
        assertTrue(byName.getMessage().contains("SIOCGIFMTU, 'xafnosuchif0'"), byName.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Syscalls.mtu("a-name-longer-than-15"));
    }
}
