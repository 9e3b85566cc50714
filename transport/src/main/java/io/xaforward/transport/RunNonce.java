package io.xaforward.transport;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

/**
 * The 16 random bytes that make one run of a job (a start or a restart) distinct from every other: every rank of
 * the run holds the same value, and the wire keys are derived from (job secret, job id, run nonce) ({@link WireSeal},
 * docs/PROTOCOL.md "Wire security"). A datagram of an earlier run was sealed under other keys and fails
 * authentication in this one. A launcher that starts every rank itself generates it ({@link #generate()}); ranks
 * started independently each contribute fresh random bytes at start-up and {@link #combine} them.
 */
public final class RunNonce {
    public static final int LENGTH = 16;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final byte[] COMBINE_LABEL = "xaf run nonce v1".getBytes(StandardCharsets.US_ASCII);

    /**
     * The nonce of a job's start-up exchange ({@link StartupExchange}), where ranks started independently ({@code xaf
     * worker}) swap their challenges, their contributions to the run nonce, before they have one: all zero bytes.
     * Keys under it are the same in every run, so nothing but the challenges (public random bytes) travels under
     * them, sealed with HMAC only, and freshness comes from the challenges, not from the key or a replay window.
     */
    public static final RunNonce STARTUP = new RunNonce(new byte[LENGTH]);

    private final byte[] bytes;

    private RunNonce(byte[] bytes) {
        if (bytes.length != LENGTH) {
            throw new IllegalArgumentException("a run nonce has " + LENGTH + " bytes, got " + bytes.length);
        }
        this.bytes = bytes.clone();
    }

    /** A fresh nonce from the system's strong random source. */
    public static RunNonce generate() {
        return new RunNonce(randomBytes());
    }

    /** 16 fresh random bytes: a rank's contribution to {@link #combine}. */
    public static byte[] randomBytes() {
        byte[] b = new byte[LENGTH];
        RANDOM.nextBytes(b);
        return b;
    }

    public static RunNonce of(byte[] bytes) {
        return new RunNonce(bytes);
    }

    /** From 32 hexadecimal digits, as {@link #hex()} writes them. */
    public static RunNonce parse(String hex) {
        byte[] b;
        try {
            b = HexFormat.of().parseHex(hex.strip());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("run nonce '" + hex + "' is not hexadecimal");
        }
        if (b.length != LENGTH) {
            throw new IllegalArgumentException("run nonce '" + hex + "' has " + b.length + " bytes, " + LENGTH + " are needed");
        }
        return new RunNonce(b);
    }

    /**
     * The run nonce of a job whose ranks each contributed {@link #randomBytes()}, in rank order: the first 16 bytes
     * of SHA-256("xaf run nonce v1" ‖ job id (u32, big-endian) ‖ contribution 0 ‖ contribution 1 ‖ ...). It is
     * fresh as long as any one contribution is, so a rank that contributed fresh bytes never shares keys with an
     * earlier run, whatever the others sent.
     */
    public static RunNonce combine(int jobId, List<byte[]> contributions) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            sha.update(COMBINE_LABEL);
            sha.update(ByteBuffer.allocate(4).putInt(jobId).array());
            for (byte[] c : contributions) {
                if (c.length != LENGTH) {
                    throw new IllegalArgumentException("a run nonce contribution has " + LENGTH + " bytes, got " + c.length);
                }
                sha.update(c);
            }
            return new RunNonce(Arrays.copyOf(sha.digest(), LENGTH));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK lacks SHA-256", e);
        }
    }

    public String hex() {
        return HexFormat.of().formatHex(bytes);
    }

    byte[] bytes() {
        return bytes.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RunNonce other && Arrays.equals(bytes, other.bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    /** Not secret, but long: the first 8 digits. */
    @Override
    public String toString() {
        return "RunNonce[" + hex().substring(0, 8) + "...]";
    }
}
