package io.xaforward.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Exact bytes of one fixed XAF packet (header fields as in {@link Frames#buildGolden}, 9-byte payload "gradient!")
 * in each form. The vectors were computed by an independent Python script (struct.pack, a bitwise CRC32C and an
 * RFC 1071 sum), not by this code: payload_sum 0xc1b0, payload_crc32c 0xb71b57bf.
 */
class GoldenFramesTest {
    static final String XAF_AND_PAYLOAD = "58460101051030010a0b0c0d00000007deadbeef0001000200000064"
            + "0000000300000004000000050009c1b0b71b57bf" + "6772616469656e7421";
    static final String IPV4 = "020000000002020000000001" + "0800"
            + "4500005500004000401126960a0000010a000002" + "9c4024ea00415571" + XAF_AND_PAYLOAD;
    static final String IPV6 = "020000000002020000000001" + "86dd"
            + "6000000000411140fd000000000000000000000000000001fd000000000000000000000000000002"
            + "9c4024ea00416f6f" + XAF_AND_PAYLOAD;
    static final String ID = "020000000002020000000001" + "0812" + "000000110a0b0c0dfd000039" + XAF_AND_PAYLOAD;

    static String golden(NetworkForm form) {
        return switch (form) {
            case IPV4 -> IPV4;
            case IPV6 -> IPV6;
            case ID -> ID;
        };
    }

    @ParameterizedTest
    @EnumSource(NetworkForm.class)
    void builtFrameIsExactlyTheGoldenVector(NetworkForm form) {
        byte[] buf = new byte[200];
        int length = Frames.buildGolden(MemorySegment.ofArray(buf), form);
        assertEquals(golden(form), Naive.hex(Arrays.copyOf(buf, length)));
    }

    @ParameterizedTest
    @EnumSource(NetworkForm.class)
    void goldenVectorParsesAndVerifies(NetworkForm form) {
        byte[] bytes = Naive.hex(golden(form));
        MemorySegment seg = MemorySegment.ofArray(bytes);
        ParsedFrame p = new FrameParser().parse(seg, bytes.length);
        assertEquals(ParsedFrame.Kind.XAF, p.kind(), p::toString);
        assertEquals(form, p.form());
        assertEquals(form.outerHeaderLength(), p.xafOffset());
        assertEquals(form.outerHeaderLength() + 48, p.payloadOffset());
        assertEquals(9, p.payloadLength());
        assertEquals(bytes.length, p.frameLength());
        assertTrue(Checksums.verifyOuter(seg, p));
        XafHeader h = new XafHeader().wrap(seg, p.xafOffset());
        assertEquals(Frames.NETWORK_ID, h.networkId());
        assertTrue(new PayloadIntegrity().verify(h));
    }
}
