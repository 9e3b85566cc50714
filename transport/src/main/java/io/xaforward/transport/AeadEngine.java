package io.xaforward.transport;

import java.lang.foreign.MemorySegment;

/**
 * AES-256-GCM under one key, applied in place to a datagram's memory: what {@link WireSeal} needs for its encrypt
 * mode (GCM) and its mac mode (GMAC: GCM with associated data only). Two libraries implement it and produce the
 * same bytes: OpenSSL's libcrypto through FFM ({@link OpenSslAead}: in place, nothing allocated per datagram) and the
 * JDK's javax.crypto ({@link JdkAead}: through a copy, the fallback where libcrypto cannot be loaded).
 *
 * <p>Every operation takes the 96-bit nonce as {@code ranks(4) || sequence(8)}, both big-endian, and the associated
 * data prefix {@code aad} (the covered header bytes); the 16-byte tag sits right after the data, at
 * {@code segment[dataAt + length, + 16)}. One instance per thread; {@link #close} frees native state.
 */
interface AeadEngine extends AutoCloseable {
    int KEY_BYTES = 32;
    int TAG_BYTES = 16;
    int NONCE_BYTES = 12;
    /** Longest associated-data prefix an engine takes. */
    int MAX_AAD_BYTES = 64;

    /** Which library runs the cipher. */
    enum Library {
        OPENSSL, JDK;

        /**
         * The library of this process, chosen once: {@code -Dxaf.wire.crypto=openssl|jdk} when set (openssl then
         * fails where libcrypto is missing), else OpenSSL when libcrypto.so.3 loads and the JDK otherwise.
         */
        static final Library SELECTED = select(System.getProperty("xaf.wire.crypto", "auto"),
                OpenSslAead.unavailableReason());

        /** The choice for property value {@code wanted} when libcrypto is unusable for {@code reason} (null: usable). */
        static Library select(String wanted, String reason) {
            return switch (wanted) {
                case "jdk" -> JDK;
                case "openssl" -> {
                    if (reason != null) {
                        throw new IllegalStateException("-Dxaf.wire.crypto=openssl, but " + reason);
                    }
                    yield OPENSSL;
                }
                case "auto" -> {
                    if (reason == null) {
                        yield OPENSSL;
                    }
                    System.getLogger(AeadEngine.class.getName()).log(System.Logger.Level.WARNING,
                            "wire security falls back to the JDK's AES-GCM (slower; allocates per datagram): " + reason);
                    yield JDK;
                }
                default -> throw new IllegalArgumentException("-Dxaf.wire.crypto=" + wanted
                        + " is none of auto, openssl, jdk");
            };
        }
    }

    /** An engine of {@code library} keyed with {@code key} (32 bytes), for data of at most {@code maxLength} bytes. */
    static AeadEngine create(Library library, byte[] key, int maxLength) {
        return library == Library.OPENSSL ? new OpenSslAead(key, maxLength) : new JdkAead(key, maxLength);
    }

    Library library();

    /** GCM: encrypts {@code segment[dataAt, + length)} in place and writes the tag after it. */
    void encrypt(byte[] aad, int ranks, long sequence, MemorySegment segment, long dataAt, int length);

    /**
     * GCM: checks the tag after {@code segment[dataAt, + length)} and decrypts the data in place; false (data
     * then undefined) when the tag does not match.
     */
    boolean decrypt(byte[] aad, int ranks, long sequence, MemorySegment segment, long dataAt, int length);

    /**
     * GMAC: writes the tag of associated data {@code aad || segment[dataAt, + length) || segment[dataAt + length + 16,
     * + 8)} (the data, then the 8 bytes after the tag: the sequence number of the wire trailer) after the data.
     */
    void sign(byte[] aad, int ranks, long sequence, MemorySegment segment, long dataAt, int length);

    /** GMAC: whether the tag after the data matches, as {@link #sign} computes it; reads only. */
    boolean verify(byte[] aad, int ranks, long sequence, MemorySegment segment, long dataAt, int length);

    /** Frees native state; idempotent. The engine must not be used afterwards. */
    @Override
    void close();
}
