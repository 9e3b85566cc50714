package io.xaforward.transport;

import io.xaforward.protocol.InternetChecksum;
import io.xaforward.protocol.XafHeader;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import java.util.random.RandomGenerator;
import java.util.zip.CRC32C;

/**
 * Seals outgoing and opens incoming XAF datagrams according to a {@link WireSecurity} mode (docs/PROTOCOL.md §5):
 * <ul>
 *   <li>every mode: {@code payload_crc32c} = CRC32C over header bytes [0, 42) with hop_limit read as 0, then the
 *       whole payload; flag {@link XafHeader#FLAG_HEADER_CHECKED};</li>
 *   <li>{@code mac}: the payload is {@code data || tag(16) || sequence(8)}, tag = AES-256-GMAC (GCM with no
 *       plaintext) over the same header bytes, the data and the sequence number as associated data, with the nonce
 *       {@code src_rank(2) || dst_rank(2) || sequence(8)};</li>
 *   <li>{@code encrypt}: as mac, but data is AES-256-GCM ciphertext and the tag is GCM's, the header bytes being the
 *       associated data, under a key of its own and the same nonce rule.</li>
 * </ul>
 * Keys are derived per run with HKDF-SHA256 (RFC 5869) from the job secret, the job id and the {@link RunNonce}
 * ({@link #deriveKey}), so a datagram of an earlier run fails authentication; senders start their sequence numbers
 * at a random salt ({@link #initialSequence}), never at the clock. Every mode reads and writes the datagram in place,
 * in the port's own memory (only the 42 covered header bytes are copied): AES-GCM runs in OpenSSL's libcrypto
 * ({@link OpenSslAead}, nothing allocated per datagram) or, where libcrypto cannot be loaded, in the JDK
 * ({@link JdkAead}: the same bytes through a copy, a few small objects per datagram); {@link AeadEngine.Library}
 * picks once per process. One instance per thread; {@link #close} frees the engine's native state. {@code
 * maxDatagramLength} bounds header + payload of what it seals and opens.
 *
 * <p>One class per mode, chosen once by {@link #of}: {@link Crc32cOnly}, {@link Mac} and {@link Encrypt}; what they
 * share (the checksums, the CRC, the length and flag checks) is here.
 */
public abstract sealed class WireSeal implements AutoCloseable permits WireSeal.Crc32cOnly, WireSeal.Authenticated {
    public static final int TAG_BYTES = AeadEngine.TAG_BYTES;
    public static final int SEQUENCE_BYTES = 8;
    public static final int TRAILER_BYTES = TAG_BYTES + SEQUENCE_BYTES;

    /** Outcomes of {@link #open}. */
    public static final int OPENED = 0;
    public static final int WRONG_MODE = 1;
    public static final int CRC_MISMATCH = 2;
    public static final int AUTH_FAILED = 3;
    public static final int TOO_LONG = 4;

    private static final ValueLayout.OfLong BE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfShort BE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private final WireSecurity mode;
    private final int flags;
    private final int maxDatagramLength;
    private final CRC32C crc = new CRC32C();
    /** The covered header bytes (hop_limit read as 0): the only bytes any mode copies. */
    final byte[] coveredHeader = new byte[XafHeader.CHECKED_HEADER_LENGTH];
    /** ByteBuffer views of the last segments sealed in and opened from (the port's stable buffers). */
    private final BufferView sealView = new BufferView();
    private final BufferView openView = new BufferView();

    // Result of the last successful open().
    private MemorySegment dataSegment;
    private long dataOffset;
    private int dataLength;
    private long sequence;

    /** HKDF info labels of the two keys (each followed by the job id as a big-endian u32). */
    static final String MAC_KEY_LABEL = "xaf wire v3 aes-256-gmac";
    static final String AES_KEY_LABEL = "xaf wire v2 aes-256-gcm";
    /** Sequence numbers start below 2^62, so a sender never wraps the signed 64-bit counter. */
    static final long SEQUENCE_SALT_BOUND = 1L << 62;

    /**
     * The seal of {@code mode}.
     *
     * @param jobId    bound into the keys: two jobs with one secret never share keys
     * @param runNonce the run's nonce, the same on every rank of the run; required by mac and encrypt
     */
    public static WireSeal of(WireSecurity mode, JobSecret secret, int jobId, RunNonce runNonce, int maxDatagramLength) {
        return of(mode, secret, jobId, runNonce, maxDatagramLength, AeadEngine.Library.SELECTED);
    }

    /** As {@link #of(WireSecurity, JobSecret, int, RunNonce, int)}, with AES-GCM from {@code library} (tests compare the two). */
    static WireSeal of(WireSecurity mode, JobSecret secret, int jobId, RunNonce runNonce, int maxDatagramLength,
                       AeadEngine.Library library) {
        return switch (mode) {
            case CRC32C -> new Crc32cOnly(maxDatagramLength);
            case MAC -> new Mac(secret, jobId, runNonce, maxDatagramLength, library);
            case ENCRYPT -> new Encrypt(secret, jobId, runNonce, maxDatagramLength, library);
        };
    }

    private WireSeal(WireSecurity mode, int maxDatagramLength) {
        this.mode = mode;
        this.flags = XafHeader.FLAG_HEADER_CHECKED
                | (mode.authenticated() ? XafHeader.FLAG_AUTHENTICATED : 0)
                | (mode == WireSecurity.ENCRYPT ? XafHeader.FLAG_ENCRYPTED : 0);
        this.maxDatagramLength = maxDatagramLength;
    }

    /**
     * A 32-byte wire key of one run: HKDF-SHA256 with salt = the run nonce, IKM = the job secret and info = {@code
     * label} ‖ job id (u32, big-endian) (docs/PROTOCOL.md "Wire security").
     */
    static byte[] deriveKey(JobSecret secret, int jobId, RunNonce runNonce, String label) {
        byte[] l = label.getBytes(StandardCharsets.US_ASCII);
        byte[] info = ByteBuffer.allocate(l.length + 4).put(l).putInt(jobId).array();
        return Hkdf.derive(runNonce.bytes(), secret.bytes(), info, 32);
    }

    /**
     * Where a sender's sequence numbers towards one peer start: a random salt in [0, 2^62) from {@code random}, then
     * counted up by one per datagram. Never read from a clock: a host whose clock went back still starts elsewhere,
     * and the run's fresh keys keep (key, nonce) pairs apart across runs in any case.
     */
    public static long initialSequence(RandomGenerator random) {
        return random.nextLong(SEQUENCE_SALT_BOUND);
    }

    public final WireSecurity mode() { return mode; }
    /** The flag bits this mode sets in every datagram. */
    public final int flags() { return flags; }
    /** Payload bytes each datagram spends on the seal beyond its data. */
    public abstract int trailerLength();

    /**
     * Seals the datagram at {@code segment[0, 48 + dataLength + trailerLength())}: the header is complete except
     * payload_sum and payload_crc32c, payload_len already counts the trailer, and the data follows the header.
     * Writes the trailer (and the ciphertext in encrypt mode), payload_sum and payload_crc32c.
     */
    public final void seal(MemorySegment segment, int dataLength, long sequenceNumber) {
        seal(segment, 0, dataLength, sequenceNumber);
    }

    /** As {@link #seal(MemorySegment, int, long)} for a datagram that starts at {@code base} of {@code segment}. */
    public final void seal(MemorySegment segment, long base, int dataLength, long sequenceNumber) {
        int header = XafHeader.LENGTH;
        int payloadLength = dataLength + trailerLength();
        if (dataLength < 0 || header + payloadLength > maxDatagramLength) {
            throw new IllegalArgumentException("a datagram of " + dataLength + " data bytes exceeds this seal's "
                    + maxDatagramLength + "-byte limit");
        }
        copyCoveredHeader(segment, base);
        protect(segment, base, base + header, dataLength, sequenceNumber);
        segment.set(BE_SHORT, base + XafHeader.PAYLOAD_SUM_OFFSET,
                (short) InternetChecksum.sum(segment, base + header, payloadLength));
        segment.set(BE_INT, base + XafHeader.PAYLOAD_CRC32C_OFFSET,
                crcInPlace(sealView.of(segment), base + header, payloadLength));
    }

    /** Writes what the mode adds to the data at {@code dataAt} before the checksums: the trailer, the ciphertext. */
    abstract void protect(MemorySegment segment, long base, long dataAt, int dataLength, long sequenceNumber);

    /**
     * Checks the datagram at {@code segment[offset, offset + 48 + payloadLength)} (bounds already checked by the
     * caller) and returns {@link #OPENED} or the reason it was rejected. After OPENED, {@link #dataSegment()},
     * {@link #dataOffset()}, {@link #dataLength()} and {@link #sequence()} describe the plain data: in place in
     * {@code segment}, decrypted there in encrypt mode. A datagram that fails in encrypt mode may have been
     * overwritten: it is only fit to be dropped.
     */
    public final int open(MemorySegment segment, long offset, int payloadLength) {
        int datagramFlags = Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, offset + XafHeader.FLAGS_OFFSET));
        if ((datagramFlags & XafHeader.WIRE_SECURITY_FLAGS) != flags || payloadLength < trailerLength()) {
            return WRONG_MODE;
        }
        if (XafHeader.LENGTH + payloadLength > maxDatagramLength) {
            return TOO_LONG;
        }
        long dataAt = offset + XafHeader.LENGTH;
        int length = payloadLength - trailerLength();
        // The CRC (over the payload as sent: ciphertext in encrypt mode) first, read where the port received it.
        copyCoveredHeader(segment, offset);
        if (crcInPlace(openView.of(segment), dataAt, payloadLength)
                != segment.get(BE_INT, offset + XafHeader.PAYLOAD_CRC32C_OFFSET)) {
            return CRC_MISMATCH;
        }
        return authenticate(segment, offset, dataAt, length);
    }

    /** After the CRC held: checks (and decrypts) what the mode protects, then {@link #opened} or AUTH_FAILED. */
    abstract int authenticate(MemorySegment segment, long offset, long dataAt, int length);

    final int opened(MemorySegment segment, long offset, int length, long seq) {
        dataSegment = segment;
        dataOffset = offset;
        dataLength = length;
        sequence = seq;
        return OPENED;
    }

    public final MemorySegment dataSegment() { return dataSegment; }
    public final long dataOffset() { return dataOffset; }
    public final int dataLength() { return dataLength; }
    public final long sequence() { return sequence; }

    /** The covered header bytes of the datagram at {@code base}, hop_limit read as 0 (gateways decrement it). */
    private void copyCoveredHeader(MemorySegment segment, long base) {
        MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, base, coveredHeader, 0, XafHeader.CHECKED_HEADER_LENGTH);
        coveredHeader[XafHeader.HOP_LIMIT_OFFSET] = 0;
    }

    /** CRC32C of the covered header bytes and the payload at {@code payloadAt}, the payload read in place. */
    private int crcInPlace(ByteBuffer view, long payloadAt, int payloadLength) {
        crc.reset();
        crc.update(coveredHeader, 0, XafHeader.CHECKED_HEADER_LENGTH);
        crc.update(view.limit((int) (payloadAt + payloadLength)).position((int) payloadAt));
        return (int) crc.getValue();
    }

    /** Which library runs this seal's AES-GCM; null for crc32c, which has none. */
    abstract AeadEngine.Library library();

    /** The same as a name for logs and benches: "openssl", "jdk", or "none" for crc32c. */
    public final String aeadLibrary() {
        AeadEngine.Library library = library();
        return library == null ? "none" : library.name().toLowerCase(Locale.ROOT);
    }

    /** Frees the AES-GCM engine's native state; idempotent. The seal must not be used afterwards. */
    @Override
    public abstract void close();

    /** {@code crc32c}: the CRC and checksums only, no trailer. */
    static final class Crc32cOnly extends WireSeal {
        Crc32cOnly(int maxDatagramLength) {
            super(WireSecurity.CRC32C, maxDatagramLength);
        }

        @Override public int trailerLength() { return 0; }
        @Override void protect(MemorySegment segment, long base, long dataAt, int dataLength, long sequenceNumber) { }
        @Override int authenticate(MemorySegment segment, long offset, long dataAt, int length) {
            return opened(segment, dataAt, length, 0);
        }
        @Override AeadEngine.Library library() { return null; }
        @Override public void close() { }
    }

    /**
     * The authenticated modes: {@code data || tag(16) || sequence(8)}, AES-256-GCM under the mode's own key, the
     * nonce {@code src_rank || dst_rank || sequence}.
     */
    abstract static sealed class Authenticated extends WireSeal permits Mac, Encrypt {
        final AeadEngine aead;

        Authenticated(WireSecurity mode, String keyLabel, JobSecret secret, int jobId, RunNonce runNonce,
                      int maxDatagramLength, AeadEngine.Library library) {
            super(mode, maxDatagramLength);
            mode.requireKeys(secret, runNonce);
            byte[] key = deriveKey(secret, jobId, runNonce, keyLabel);
            aead = AeadEngine.create(library, key, maxDatagramLength);
            Arrays.fill(key, (byte) 0);
        }

        @Override public final int trailerLength() { return TRAILER_BYTES; }

        @Override
        final void protect(MemorySegment segment, long base, long dataAt, int dataLength, long sequenceNumber) {
            segment.set(BE_LONG, dataAt + dataLength + TAG_BYTES, sequenceNumber);
            seal(segment.get(BE_INT, base + XafHeader.SRC_RANK_OFFSET), sequenceNumber, segment, dataAt, dataLength);
        }

        @Override
        final int authenticate(MemorySegment segment, long offset, long dataAt, int length) {
            long seq = segment.get(BE_LONG, dataAt + length + TAG_BYTES);
            int ranks = segment.get(BE_INT, offset + XafHeader.SRC_RANK_OFFSET);
            return check(ranks, seq, segment, dataAt, length) ? opened(segment, dataAt, length, seq) : AUTH_FAILED;
        }

        /** Writes the tag (and encrypts the data, in place). */
        abstract void seal(int ranks, long seq, MemorySegment segment, long dataAt, int dataLength);

        /** Verifies the tag (and decrypts the data, in place); false when it does not hold. */
        abstract boolean check(int ranks, long seq, MemorySegment segment, long dataAt, int dataLength);

        @Override final AeadEngine.Library library() { return aead.library(); }
        @Override public final void close() { aead.close(); }
    }

    /** {@code mac}: the data in clear, tag = AES-256-GMAC over the covered header, the data and the sequence number. */
    static final class Mac extends Authenticated {
        Mac(JobSecret secret, int jobId, RunNonce runNonce, int maxDatagramLength, AeadEngine.Library library) {
            super(WireSecurity.MAC, MAC_KEY_LABEL, secret, jobId, runNonce, maxDatagramLength, library);
        }

        @Override void seal(int ranks, long seq, MemorySegment segment, long dataAt, int dataLength) {
            aead.sign(coveredHeader, ranks, seq, segment, dataAt, dataLength);
        }

        @Override boolean check(int ranks, long seq, MemorySegment segment, long dataAt, int dataLength) {
            return aead.verify(coveredHeader, ranks, seq, segment, dataAt, dataLength);
        }
    }

    /** {@code encrypt}: the data is AES-256-GCM ciphertext, the covered header its associated data. */
    static final class Encrypt extends Authenticated {
        Encrypt(JobSecret secret, int jobId, RunNonce runNonce, int maxDatagramLength, AeadEngine.Library library) {
            super(WireSecurity.ENCRYPT, AES_KEY_LABEL, secret, jobId, runNonce, maxDatagramLength, library);
        }

        @Override void seal(int ranks, long seq, MemorySegment segment, long dataAt, int dataLength) {
            aead.encrypt(coveredHeader, ranks, seq, segment, dataAt, dataLength);
        }

        @Override boolean check(int ranks, long seq, MemorySegment segment, long dataAt, int dataLength) {
            return aead.decrypt(coveredHeader, ranks, seq, segment, dataAt, dataLength);
        }
    }

    /**
     * A ByteBuffer over a segment, made once per segment: the ports hand over the same send and receive buffers
     * every time, so after the first datagram nothing is allocated.
     */
    private static final class BufferView {
        private MemorySegment segment;
        private ByteBuffer buffer;

        ByteBuffer of(MemorySegment s) {
            if (s != segment) {
                if (s.byteSize() > Integer.MAX_VALUE) {
                    throw new IllegalArgumentException("a datagram buffer of " + s.byteSize() + " bytes is too large");
                }
                buffer = s.asByteBuffer();
                segment = s;
            }
            return buffer.clear();
        }
    }
}
