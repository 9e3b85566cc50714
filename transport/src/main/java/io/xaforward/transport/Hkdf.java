package io.xaforward.transport;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.security.GeneralSecurityException;

/**
 * HKDF with HMAC-SHA256 (RFC 5869): {@link #extract} concentrates the input keying material into a pseudorandom key,
 * {@link #expand} stretches that key into output keying material bound to an {@code info} context. The transport
 * derives every run's wire keys with it ({@link WireSeal}).
 */
public final class Hkdf {
    /** HMAC-SHA256's output length. */
    public static final int HASH_LENGTH = 32;

    private Hkdf() {}

    /** HKDF-Extract(salt, IKM) = HMAC-SHA256(salt, IKM); an empty salt stands for 32 zero bytes (RFC 5869 §2.2). */
    public static byte[] extract(byte[] salt, byte[] inputKeyMaterial) {
        return hmac(salt.length == 0 ? new byte[HASH_LENGTH] : salt, inputKeyMaterial);
    }

    /** HKDF-Expand(PRK, info, L): T(1) ‖ T(2) ‖ ... truncated to {@code length} bytes, at most 255 × 32. */
    public static byte[] expand(byte[] prk, byte[] info, int length) {
        if (length < 0 || length > 255 * HASH_LENGTH) {
            throw new IllegalArgumentException("HKDF-SHA256 output length must be 0.." + 255 * HASH_LENGTH + ", was " + length);
        }
        if (prk.length < HASH_LENGTH) {
            throw new IllegalArgumentException("HKDF pseudorandom key of " + prk.length + " bytes is shorter than " + HASH_LENGTH);
        }
        byte[] out = new byte[length];
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(prk, "HmacSHA256"));
            byte[] t = new byte[0];
            for (int i = 1, at = 0; at < length; i++) {
                mac.update(t);
                mac.update(info);
                mac.update((byte) i);
                t = mac.doFinal();
                int n = Math.min(t.length, length - at);
                System.arraycopy(t, 0, out, at, n);
                at += n;
            }
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK lacks HmacSHA256", e);
        }
        return out;
    }

    /** Extract then expand. */
    public static byte[] derive(byte[] salt, byte[] inputKeyMaterial, byte[] info, int length) {
        return expand(extract(salt, inputKeyMaterial), info, length);
    }

    private static byte[] hmac(byte[] key, byte[] data) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return mac.doFinal(data);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK lacks HmacSHA256", e);
        }
    }
}
