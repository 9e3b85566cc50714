package io.xaforward.bench.wire;

import org.junit.jupiter.api.Test;

import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MacCandidatesTest {
    private static final int PAYLOAD = 1400;

    private static ByteBuffer datagram() {
        ByteBuffer b = ByteBuffer.allocateDirect(PAYLOAD + 64);
        for (int i = 0; i < PAYLOAD; i++) b.put(i, (byte) (i * 7));
        return b;
    }

    private static byte[] bytes(ByteBuffer b, int from, int length) {
        byte[] out = new byte[length];
        b.get(from, out);
        return out;
    }

    @Test
    void theHandWrittenHmacGivesTheJdksTagAndAllocatesNothing() throws Exception {
        ByteBuffer a = datagram();
        ByteBuffer b = datagram();
        new MacCandidates.HmacSha256ByHand().seal(a, PAYLOAD, 1);
        new MacCandidates.JdkHmacSha256().seal(b, PAYLOAD, 1);
        assertArrayEquals(bytes(b, PAYLOAD, 16), bytes(a, PAYLOAD, 16));
        MacCandidates.Result r = MacCandidates.measure(new MacCandidates.HmacSha256ByHand(), PAYLOAD, 20_000);
        assertTrue(r.bytesAllocatedPerDatagram() < 1, "allocated " + r.bytesAllocatedPerDatagram() + " B/datagram");
        assertTrue(r.nanosPerDatagram() > 0 && r.gbPerSecond() > 0);
    }

    @Test
    void aesGcmSealsWhatTheJdkDecryptsWithTheSameNonce() throws Exception {
        ByteBuffer d = datagram();
        byte[] plain = bytes(d, 0, PAYLOAD);
        new MacCandidates.AesGcm(false).seal(d, PAYLOAD, 42);
        byte[] sealed = bytes(d, 0, PAYLOAD + 16);
        assertFalse(java.util.Arrays.equals(plain, java.util.Arrays.copyOf(sealed, PAYLOAD)), "not encrypted");
        byte[] key = new byte[32];
        for (int i = 0; i < key.length; i++) key[i] = (byte) (31 * i + 7);
        byte[] nonce = new byte[12];
        MacCandidates.nonce(nonce, 42);
        Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
        c.init(Cipher.DECRYPT_MODE, new SecretKeySpec(key, "AES"), new GCMParameterSpec(128, nonce));
        assertArrayEquals(plain, c.doFinal(sealed));
    }

    @Test
    void authenticateOnlyCandidatesLeaveTheDataInTheClearAndTagDependsOnTheSequence() throws Exception {
        for (MacCandidates.Candidate candidate : List.of(new MacCandidates.AesGcm(true),
                new MacCandidates.ChaCha20Poly1305(true))) {
            ByteBuffer d = datagram();
            byte[] plain = bytes(d, 0, PAYLOAD);
            candidate.seal(d, PAYLOAD, 1);
            byte[] first = bytes(d, PAYLOAD, 16);
            assertArrayEquals(plain, bytes(d, 0, PAYLOAD), candidate.name());
            candidate.seal(d, PAYLOAD, 2);
            assertFalse(java.util.Arrays.equals(first, bytes(d, PAYLOAD, 16)), candidate.name() + ": same tag");
        }
    }

    @Test
    void everyCandidateIsMeasuredInAFreshJvmWithItsName() throws Exception {
        List<MacCandidates.Result> results = MacCandidates.measure(PAYLOAD, 2_000, 1);
        assertEquals(7, results.size());
        Set<String> names = results.stream().map(MacCandidates.Result::name).collect(Collectors.toSet());
        assertEquals(7, names.size());
        for (MacCandidates.Result r : results) {
            assertEquals(PAYLOAD, r.payload());
            assertTrue(r.nanosPerDatagram() > 0, r.name());
        }
    }
}
