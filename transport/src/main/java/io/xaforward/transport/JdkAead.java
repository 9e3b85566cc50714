package io.xaforward.transport;

import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.security.GeneralSecurityException;

/**
 * {@link AeadEngine} on the JDK's AES/GCM: the fallback where libcrypto cannot be loaded. The JDK's GCM intrinsics
 * work on arrays, so each operation copies the data into a reusable array and the result back; {@code Cipher.init}
 * allocates a few small objects per datagram. Open verifies in DECRYPT mode even for GMAC: the JDK refuses an
 * ENCRYPT init that repeats the previous one's nonce, which a seal and an open of the same datagram would. (That
 * refusal stays for seals: sealing twice in a row under one nonce throws here, where OpenSSL would comply. Senders
 * never do; see PROTOCOL.md "Nonce uniqueness".)
 */
final class JdkAead implements AeadEngine {
    private final Cipher cipher;
    private final SecretKeySpec key;
    private final byte[] nonce = new byte[NONCE_BYTES];
    private final byte[] work;

    JdkAead(byte[] key, int maxLength) {
        if (key.length != KEY_BYTES) {
            throw new IllegalArgumentException("AES-256 takes a 32-byte key, not " + key.length);
        }
        try {
            cipher = Cipher.getInstance("AES/GCM/NoPadding");
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK lacks AES/GCM", e);
        }
        this.key = new SecretKeySpec(key, "AES");
        this.work = new byte[maxLength + TAG_BYTES];
    }

    @Override
    public Library library() { return Library.JDK; }

    @Override
    public void encrypt(byte[] aad, int ranks, long sequence, MemorySegment segment, long dataAt, int length) {
        MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, dataAt, work, 0, length);
        try {
            start(Cipher.ENCRYPT_MODE, aad, ranks, sequence);
            cipher.doFinal(work, 0, length, work, 0); // in place: GCM handles overlapping input and output
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK's AES-GCM failed to encrypt", e);
        }
        MemorySegment.copy(work, 0, segment, ValueLayout.JAVA_BYTE, dataAt, length + TAG_BYTES);
    }

    @Override
    public boolean decrypt(byte[] aad, int ranks, long sequence, MemorySegment segment, long dataAt, int length) {
        MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, dataAt, work, 0, length + TAG_BYTES);
        try {
            start(Cipher.DECRYPT_MODE, aad, ranks, sequence);
            cipher.doFinal(work, 0, length + TAG_BYTES, work, 0);
        } catch (AEADBadTagException e) {
            return false;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK's AES-GCM failed to decrypt", e);
        }
        MemorySegment.copy(work, 0, segment, ValueLayout.JAVA_BYTE, dataAt, length);
        return true;
    }

    @Override
    public void sign(byte[] aad, int ranks, long sequence, MemorySegment segment, long dataAt, int length) {
        try {
            start(Cipher.ENCRYPT_MODE, aad, ranks, sequence);
            authenticate(segment, dataAt, length);
            cipher.doFinal(work, 0, 0, work, 0);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK's AES-GCM failed to authenticate", e);
        }
        MemorySegment.copy(work, 0, segment, ValueLayout.JAVA_BYTE, dataAt + length, TAG_BYTES);
    }

    @Override
    public boolean verify(byte[] aad, int ranks, long sequence, MemorySegment segment, long dataAt, int length) {
        try {
            start(Cipher.DECRYPT_MODE, aad, ranks, sequence);
            authenticate(segment, dataAt, length);
            // The tag as a ciphertext of no bytes: doFinal checks it (constant time) and yields nothing.
            MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, dataAt + length, work, 0, TAG_BYTES);
            cipher.doFinal(work, 0, TAG_BYTES, work, TAG_BYTES);
            return true;
        } catch (AEADBadTagException e) {
            return false;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK's AES-GCM failed to verify", e);
        }
    }

    /** The data and the sequence number behind the tag as associated data, through the work array. */
    private void authenticate(MemorySegment segment, long dataAt, int length) {
        MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, dataAt, work, 0, length);
        cipher.updateAAD(work, 0, length);
        MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, dataAt + length + TAG_BYTES, work, 0,
                WireSeal.SEQUENCE_BYTES);
        cipher.updateAAD(work, 0, WireSeal.SEQUENCE_BYTES);
    }

    private void start(int opmode, byte[] aad, int ranks, long sequence) throws GeneralSecurityException {
        for (int i = 0; i < 4; i++) {
            nonce[i] = (byte) (ranks >>> (24 - 8 * i));
        }
        for (int i = 0; i < 8; i++) {
            nonce[4 + i] = (byte) (sequence >>> (56 - 8 * i));
        }
        cipher.init(opmode, key, new GCMParameterSpec(TAG_BYTES * 8, nonce));
        cipher.updateAAD(aad);
    }

    @Override
    public void close() {
        // Nothing native: the key and arrays go with the object.
    }
}
