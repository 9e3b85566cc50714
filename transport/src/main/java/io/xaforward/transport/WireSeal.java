package io.xaforward.transport;

import io.xaforward.protocol.XafHeader;

import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.zip.CRC32C;

/**
 * Seals outgoing and opens incoming XAF datagrams according to a {@link WireSecurity} mode (docs/PROTOCOL.md §5):
 * <ul>
 *   <li>every mode: {@code payload_crc32c} = CRC32C over header bytes [0, 42) with hop_limit read as 0, then the
 *       whole payload; flag {@link XafHeader#FLAG_HEADER_CHECKED};</li>
 *   <li>{@code mac}: the payload is {@code data || tag(16) || sequence(8)}, tag = HMAC-SHA256 truncated to 128 bits
 *       over the same header bytes, the data and the sequence number;</li>
 *   <li>{@code encrypt}: as mac, but data is AES-256-GCM ciphertext and the tag is GCM's, the header bytes being the
 *       associated data and the nonce {@code src_rank(2) || dst_rank(2) || sequence(8)}.</li>
 * </ul>
 * Keys for HMAC and AES are derived per run with HKDF-SHA256 (RFC 5869) from the job secret, the job id and the
 * {@link RunNonce} ({@link #deriveKey}), so a datagram of an earlier run fails authentication; senders start their
 * sequence numbers at a random salt ({@link #initialSequence}), never at the clock. crc32c and mac read and
 * write the datagram in place, in the port's own memory (only the 42 covered header bytes are copied) and allocate
 * nothing per datagram; encrypt copies the datagram once into a reusable array for the JDK's GCM, which allocates a
 * few small objects per datagram. One instance per thread. {@code
 * maxDatagramLength} bounds header + payload of what it seals and opens.
 */
public final class WireSeal {
    public static final int TAG_BYTES = 16;
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

    private final WireSecurity mode;
    private final int flags;
    private final CRC32C crc = new CRC32C();
    /** HMAC-SHA256 by hand over two digests: the JDK's Mac.doFinal allocates its result on every call. */
    private final MessageDigest inner;
    private final MessageDigest outer;
    private final byte[] innerPad = new byte[64];
    private final byte[] outerPad = new byte[64];
    private final byte[] innerHash = new byte[32];
    private final Cipher cipher;
    private final SecretKeySpec aesKey;
    private final byte[] copy;
    private final MemorySegment copySegment;
    private final byte[] plain;
    private final MemorySegment plainSegment;
    private final byte[] tag = new byte[32];
    private final byte[] nonce = new byte[12];
    /** The covered header bytes (hop_limit read as 0): the only bytes crc32c and mac copy. */
    private final byte[] coveredHeader = new byte[XafHeader.CHECKED_HEADER_LENGTH];
    /** ByteBuffer views of the last segments sealed in and opened from (the port's stable buffers). */
    private final BufferView sealView = new BufferView();
    private final BufferView openView = new BufferView();

    // Result of the last successful open().
    private MemorySegment dataSegment;
    private long dataOffset;
    private int dataLength;
    private long sequence;

    /** HKDF info labels of the two keys (each followed by the job id as a big-endian u32). */
    static final String MAC_KEY_LABEL = "xaf wire v2 hmac-sha256";
    static final String AES_KEY_LABEL = "xaf wire v2 aes-256-gcm";
    /** Sequence numbers start below 2^62, so a sender never wraps the signed 64-bit counter. */
    static final long SEQUENCE_SALT_BOUND = 1L << 62;

    /**
     * @param jobId    bound into the keys: two jobs with one secret never share keys
     * @param runNonce the run's nonce, the same on every rank of the run; required by mac and encrypt
     */
    public WireSeal(WireSecurity mode, JobSecret secret, int jobId, RunNonce runNonce, int maxDatagramLength) {
        this.mode = mode;
        this.flags = XafHeader.FLAG_HEADER_CHECKED
                | (mode.authenticated() ? XafHeader.FLAG_AUTHENTICATED : 0)
                | (mode == WireSecurity.ENCRYPT ? XafHeader.FLAG_ENCRYPTED : 0);
        copy = new byte[maxDatagramLength + TAG_BYTES];
        copySegment = MemorySegment.ofArray(copy);
        plain = mode == WireSecurity.ENCRYPT ? new byte[maxDatagramLength] : null;
        plainSegment = plain == null ? null : MemorySegment.ofArray(plain);
        if (!mode.authenticated()) {
            inner = null;
            outer = null;
            cipher = null;
            aesKey = null;
            return;
        }
        mode.requireKeys(secret, runNonce);
        try {
            byte[] macKey = deriveKey(secret, jobId, runNonce, MAC_KEY_LABEL); // 32 bytes: shorter than the block, used as is
            for (int i = 0; i < 64; i++) {
                byte k = i < macKey.length ? macKey[i] : 0;
                innerPad[i] = (byte) (k ^ 0x36);
                outerPad[i] = (byte) (k ^ 0x5c);
            }
            inner = MessageDigest.getInstance("SHA-256");
            outer = MessageDigest.getInstance("SHA-256");
            if (mode == WireSecurity.ENCRYPT) {
                cipher = Cipher.getInstance("AES/GCM/NoPadding");
                aesKey = new SecretKeySpec(deriveKey(secret, jobId, runNonce, AES_KEY_LABEL), "AES");
            } else {
                cipher = null;
                aesKey = null;
            }
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK lacks HmacSHA256 or AES/GCM", e);
        }
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
    public static long initialSequence(java.util.random.RandomGenerator random) {
        return random.nextLong(SEQUENCE_SALT_BOUND);
    }

    public WireSecurity mode() { return mode; }
    /** The flag bits this mode sets in every datagram. */
    public int flags() { return flags; }
    /** Payload bytes each datagram spends on the seal beyond its data. */
    public int trailerLength() { return mode.authenticated() ? TRAILER_BYTES : 0; }

    /**
     * Seals the datagram at {@code segment[0, 48 + dataLength + trailerLength())}: the header is complete except
     * payload_sum and payload_crc32c, payload_len already counts the trailer, and the data follows the header.
     * Writes the trailer (and the ciphertext in encrypt mode), payload_sum and payload_crc32c.
     */
    public void seal(MemorySegment segment, int dataLength, long sequenceNumber) {
        seal(segment, 0, dataLength, sequenceNumber);
    }

    /** As {@link #seal(MemorySegment, int, long)} for a datagram that starts at {@code base} of {@code segment}. */
    public void seal(MemorySegment segment, long base, int dataLength, long sequenceNumber) {
        int header = XafHeader.LENGTH;
        int payloadLength = dataLength + trailerLength();
        if (mode == WireSecurity.ENCRYPT) {
            MemorySegment.copy(segment, base, copySegment, 0, header + dataLength);
            copy[XafHeader.HOP_LIMIT_OFFSET] = 0;
            try {
                cipher.init(Cipher.ENCRYPT_MODE, aesKey, new GCMParameterSpec(TAG_BYTES * 8, nonce(sequenceNumber)));
                cipher.updateAAD(copy, 0, XafHeader.CHECKED_HEADER_LENGTH);
                // In place in the copy: GCM handles overlapping input and output.
                cipher.doFinal(copy, header, dataLength, copy, header);
            } catch (GeneralSecurityException e) {
                throw new IllegalStateException("AES-GCM failed to encrypt", e);
            }
            copySegment.set(BE_LONG, header + dataLength + TAG_BYTES, sequenceNumber);
            MemorySegment.copy(copySegment, header, segment, base + header, payloadLength);
        } else {
            // crc32c and mac work in place on the datagram: only the 42 covered header bytes are copied.
            copyCoveredHeader(segment, base);
            if (mode == WireSecurity.MAC) {
                long trailer = base + header + dataLength;
                segment.set(BE_LONG, trailer + TAG_BYTES, sequenceNumber);
                computeMac(sealView.of(segment), base + header, dataLength, trailer + TAG_BYTES);
                MemorySegment.copy(tag, 0, segment, ValueLayout.JAVA_BYTE, trailer, TAG_BYTES);
            }
        }
        segment.set(XafHeaderFields.SUM, base + XafHeader.PAYLOAD_SUM_OFFSET,
                (short) PayloadChecksums.onesComplementSum(segment, base + header, payloadLength));
        segment.set(BE_INT, base + XafHeader.PAYLOAD_CRC32C_OFFSET, mode == WireSecurity.ENCRYPT
                ? crcOfCopy(payloadLength) : crcInPlace(sealView.of(segment), base + header, payloadLength));
    }

    /**
     * Checks the datagram at {@code segment[offset, offset + 48 + payloadLength)} (bounds already checked by the
     * caller) and returns {@link #OPENED} or the reason it was rejected. After OPENED, {@link #dataSegment()},
     * {@link #dataOffset()}, {@link #dataLength()} and {@link #sequence()} describe the plain data.
     */
    public int open(MemorySegment segment, long offset, int payloadLength) {
        int datagramFlags = Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, offset + XafHeader.FLAGS_OFFSET));
        if ((datagramFlags & XafHeader.WIRE_SECURITY_FLAGS) != flags || payloadLength < trailerLength()) {
            return WRONG_MODE;
        }
        if (XafHeader.LENGTH + payloadLength > copy.length - TAG_BYTES) {
            return TOO_LONG;
        }
        int header = XafHeader.LENGTH;
        int length = payloadLength - trailerLength();
        if (mode != WireSecurity.ENCRYPT) {
            // crc32c and mac check in place: the payload is read where the port received it, never copied.
            copyCoveredHeader(segment, offset);
            ByteBuffer view = openView.of(segment);
            if (crcInPlace(view, offset + header, payloadLength)
                    != segment.get(BE_INT, offset + XafHeader.PAYLOAD_CRC32C_OFFSET)) {
                return CRC_MISMATCH;
            }
            if (mode == WireSecurity.CRC32C) {
                return opened(segment, offset + header, length, 0);
            }
            long trailer = offset + header + length;
            long seq = segment.get(BE_LONG, trailer + TAG_BYTES);
            computeMac(view, offset + header, length, trailer + TAG_BYTES);
            int diff = 0;
            for (int i = 0; i < TAG_BYTES; i++) {
                diff |= tag[i] ^ segment.get(ValueLayout.JAVA_BYTE, trailer + i); // constant time
            }
            return diff == 0 ? opened(segment, offset + header, length, seq) : AUTH_FAILED;
        }
        MemorySegment.copy(segment, offset, copySegment, 0, header + payloadLength);
        copy[XafHeader.HOP_LIMIT_OFFSET] = 0;
        if (crcOfCopy(payloadLength) != copySegment.get(BE_INT, XafHeader.PAYLOAD_CRC32C_OFFSET)) {
            return CRC_MISMATCH;
        }
        long seq = copySegment.get(BE_LONG, header + length + TAG_BYTES);
        try {
            cipher.init(Cipher.DECRYPT_MODE, aesKey, new GCMParameterSpec(TAG_BYTES * 8, nonce(seq)));
            cipher.updateAAD(copy, 0, XafHeader.CHECKED_HEADER_LENGTH);
            cipher.doFinal(copy, header, length + TAG_BYTES, plain, 0);
        } catch (AEADBadTagException e) {
            return AUTH_FAILED;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES-GCM failed to decrypt", e);
        }
        return opened(plainSegment, 0, length, seq);
    }

    private int opened(MemorySegment segment, long offset, int length, long seq) {
        dataSegment = segment;
        dataOffset = offset;
        dataLength = length;
        sequence = seq;
        return OPENED;
    }

    public MemorySegment dataSegment() { return dataSegment; }
    public long dataOffset() { return dataOffset; }
    public int dataLength() { return dataLength; }
    public long sequence() { return sequence; }

    /**
     * HMAC over the covered header bytes, the data and the sequence number, read in place through {@code view} (a
     * ByteBuffer over the datagram's segment: a direct buffer for the ports' memory), into {@link #tag}.
     */
    private void computeMac(ByteBuffer view, long dataAt, int dataLength, long sequenceAt) {
        try {
            inner.update(innerPad);
            inner.update(coveredHeader, 0, XafHeader.CHECKED_HEADER_LENGTH);
            inner.update(view.limit((int) (dataAt + dataLength)).position((int) dataAt));
            inner.update(view.limit((int) (sequenceAt + SEQUENCE_BYTES)).position((int) sequenceAt));
            inner.digest(innerHash, 0, innerHash.length);
            outer.update(outerPad);
            outer.update(innerHash);
            outer.digest(tag, 0, tag.length);
        } catch (java.security.DigestException e) {
            throw new IllegalStateException(e);
        }
    }

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

    private int crcOfCopy(int payloadLength) {
        crc.reset();
        crc.update(copy, 0, XafHeader.CHECKED_HEADER_LENGTH);
        crc.update(copy, XafHeader.LENGTH, payloadLength);
        return (int) crc.getValue();
    }

    /** src_rank, dst_rank (from the copied header) and the sequence number: unique per key as long as the
     * sequence number never repeats for a (src, dst) pair, which a counter from a random salt under per-run keys
     * ensures. */
    private byte[] nonce(long seq) {
        System.arraycopy(copy, XafHeader.SRC_RANK_OFFSET, nonce, 0, 4);
        for (int i = 0; i < 8; i++) {
            nonce[4 + i] = (byte) (seq >>> (56 - 8 * i));
        }
        return nonce;
    }

    private static final class XafHeaderFields {
        static final ValueLayout.OfShort SUM = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    }
}
