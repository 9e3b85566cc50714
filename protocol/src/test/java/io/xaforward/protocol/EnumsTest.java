package io.xaforward.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class EnumsTest {
    @Test
    void networkFormsMatchXafSharedH() {
        assertEquals(1, NetworkForm.IPV4.code());
        assertEquals(2, NetworkForm.IPV6.code());
        assertEquals(3, NetworkForm.ID.code());
        assertEquals(42, NetworkForm.IPV4.outerHeaderLength());
        assertEquals(62, NetworkForm.IPV6.outerHeaderLength());
        assertEquals(26, NetworkForm.ID.outerHeaderLength());
        assertEquals(0xFFFF - 76, NetworkForm.IPV4.maxPayload());
        assertEquals(0xFFFF - 56, NetworkForm.IPV6.maxPayload());
        assertEquals(0xFFFF - 48, NetworkForm.ID.maxPayload());
        for (NetworkForm f : NetworkForm.values()) {
            assertEquals(f, NetworkForm.fromCode(f.code()));
            assertEquals(f, NetworkForm.fromName(f.configName()));
        }
    }

    @Test
    void unknownFormCodesAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> NetworkForm.fromCode(0));
        assertThrows(IllegalArgumentException.class, () -> NetworkForm.fromCode(4));
    }

    @Test
    void messageAndElementTypesMatchXafSharedH() {
        assertEquals(1, MessageType.DATA.code());
        assertEquals(2, MessageType.ACK.code());
        assertEquals(3, MessageType.NACK.code());
        assertEquals(4, MessageType.CONTROL.code());
        for (MessageType t : MessageType.values()) {
            assertEquals(t, MessageType.fromCode(t.code()));
            assertEquals(t, MessageType.ofCode(t.code()));
        }
        assertThrows(IllegalArgumentException.class, () -> MessageType.fromCode(0));
        assertNull(MessageType.ofCode(0));
        assertNull(MessageType.ofCode(5));
        int[] codes = {0, 1, 2, 3, 4, 5, 6, 7};
        int[] sizes = {1, 4, 2, 2, 4, 8, 1, 1};
        ElementType[] types = {ElementType.BYTES, ElementType.F32, ElementType.F16, ElementType.BF16,
                ElementType.I32, ElementType.F64, ElementType.I8_BLOCKS, ElementType.I4_BLOCKS};
        for (int i = 0; i < types.length; i++) {
            assertEquals(codes[i], types[i].code());
            assertEquals(sizes[i], types[i].size());
            assertEquals(types[i], ElementType.fromCode(codes[i]));
        }
        assertThrows(IllegalArgumentException.class, () -> ElementType.fromCode(8));
    }
}
