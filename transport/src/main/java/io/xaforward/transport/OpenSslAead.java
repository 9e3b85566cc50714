package io.xaforward.transport;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.ref.Cleaner;
import java.nio.ByteOrder;
import java.util.Objects;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@link AeadEngine} on OpenSSL's libcrypto (libcrypto.so.3) through FFM: EVP AES-256-GCM run in place on the
 * datagram's memory, nothing allocated per datagram. Two EVP_CIPHER_CTX, one keyed for sealing and one for opening
 * (a context keyed once for one direction is re-initialised per datagram with the nonce only); EVP calls return 1
 * on success, and any other result of a call that cannot fail on good input is thrown with OpenSSL's error queue.
 *
 * <p>The contexts and scratch memory belong to a shared arena, freed by {@link #close} (or by a {@link Cleaner} for
 * an engine nobody closed). The per-datagram calls pass plain addresses rather than segments: a segment argument
 * costs an atomic acquire and release of its arena per call, measured at 5-10% of a seal + open (about 55-90 ns of
 * 0.8-1.1 us at 1400 bytes). Each operation checks first that the arena is open, so a call after close fails with
 * an IllegalStateException instead of touching freed memory; close must not race a call, which one thread per
 * engine (as per {@link WireSeal}) rules out. The per-datagram calls are critical downcalls (no thread-state
 * transition): each runs for at most a few microseconds and never calls back into Java.
 */
final class OpenSslAead implements AeadEngine {
    private static final int EVP_CTRL_AEAD_GET_TAG = 0x10;
    static final int EVP_CTRL_AEAD_SET_TAG = 0x11;
    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfLong BE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final Cleaner CLEANER = Cleaner.create();
    private static final String UNAVAILABLE = probe();

    private final Arena arena = Arena.ofShared();
    private final Cleaner.Cleanable cleanable;
    private final MemorySegment sealCtx;
    private final MemorySegment openCtx;
    private final MemorySegment nonce;
    private final MemorySegment aadCopy;
    /** EVP's out-length argument and the (empty) output of Final. */
    private final MemorySegment outLength;
    private final MemorySegment finalOut;
    /** Where a heap segment's bytes are worked on (the ports' native memory never is). */
    private final MemorySegment bounce;
    /** The same as raw addresses for the per-datagram calls. */
    private final long sealCtxAt, openCtxAt, nonceAt, aadAt, outLengthAt, finalOutAt;

    OpenSslAead(byte[] key, int maxLength) {
        requireAvailable();
        if (key.length != KEY_BYTES) {
            throw new IllegalArgumentException("AES-256 takes a 32-byte key, not " + key.length);
        }
        Arena owned = arena;
        cleanable = CLEANER.register(this, owned::close);
        nonce = arena.allocate(NONCE_BYTES);
        aadCopy = arena.allocate(MAX_AAD_BYTES);
        outLength = arena.allocate(JAVA_INT);
        finalOut = arena.allocate(32);
        bounce = arena.allocate(maxLength + TAG_BYTES + WireSeal.SEQUENCE_BYTES, 64);
        MemorySegment keyCopy = arena.allocate(KEY_BYTES);
        try {
            MemorySegment.copy(key, 0, keyCopy, ValueLayout.JAVA_BYTE, 0, KEY_BYTES);
            sealCtx = newContext();
            openCtx = newContext();
            MemorySegment gcm = (MemorySegment) Lib.AES_256_GCM.invokeExact();
            check((int) Lib.ENCRYPT_INIT.invokeExact(sealCtx, gcm, MemorySegment.NULL, keyCopy, MemorySegment.NULL),
                    "EVP_EncryptInit_ex (key)");
            check((int) Lib.DECRYPT_INIT.invokeExact(openCtx, gcm, MemorySegment.NULL, keyCopy, MemorySegment.NULL),
                    "EVP_DecryptInit_ex (key)");
            sealCtxAt = sealCtx.address();
            openCtxAt = openCtx.address();
            nonceAt = nonce.address();
            aadAt = aadCopy.address();
            outLengthAt = outLength.address();
            finalOutAt = finalOut.address();
        } catch (Throwable t) {
            cleanable.clean();
            throw rethrow(t);
        } finally {
            if (keyCopy.scope().isAlive()) {
                keyCopy.fill((byte) 0); // OpenSSL keeps its own key schedule; no copy of the key lingers here
            }
        }
    }

    /** Why libcrypto cannot be used, or null when it can. */
    static String unavailableReason() { return UNAVAILABLE; }

    static void requireAvailable() {
        if (UNAVAILABLE != null) {
            throw new IllegalStateException("OpenSSL's libcrypto is not usable for wire security: " + UNAVAILABLE);
        }
    }

    @Override
    public Library library() { return Library.OPENSSL; }

    @Override
    public void encrypt(byte[] aad, int ranks, long sequence, MemorySegment segment, long dataAt, int length) {
        try {
            long data = address(segment, dataAt, length + TAG_BYTES);
            start(true, aad, ranks, sequence);
            if (length > 0) {
                check((int) Lib.ENCRYPT_UPDATE.invokeExact(sealCtxAt, data, outLengthAt, data, length), "EVP_EncryptUpdate");
            }
            finishSeal(data + length);
            copyBack(segment, dataAt, length + TAG_BYTES);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    @Override
    public boolean decrypt(byte[] aad, int ranks, long sequence, MemorySegment segment, long dataAt, int length) {
        try {
            long data = address(segment, dataAt, length + TAG_BYTES);
            start(false, aad, ranks, sequence);
            if (length > 0) {
                check((int) Lib.DECRYPT_UPDATE.invokeExact(openCtxAt, data, outLengthAt, data, length), "EVP_DecryptUpdate");
            }
            boolean authentic = finishOpen(data + length);
            copyBack(segment, dataAt, length);
            return authentic;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    @Override
    public void sign(byte[] aad, int ranks, long sequence, MemorySegment segment, long dataAt, int length) {
        try {
            long data = address(segment, dataAt, length + TAG_BYTES + WireSeal.SEQUENCE_BYTES);
            start(true, aad, ranks, sequence);
            authenticate(true, data, length);
            finishSeal(data + length);
            copyBack(segment, dataAt, length + TAG_BYTES);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    @Override
    public boolean verify(byte[] aad, int ranks, long sequence, MemorySegment segment, long dataAt, int length) {
        try {
            long data = address(segment, dataAt, length + TAG_BYTES + WireSeal.SEQUENCE_BYTES);
            start(false, aad, ranks, sequence);
            authenticate(false, data, length);
            return finishOpen(data + length);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * The native address of {@code segment[at, at + length)}, bounds and liveness checked. Pointers cross into
     * libcrypto as plain addresses: a slice per call would allocate per datagram. The ports' memory is native and is
     * worked on where it lies; a heap segment is copied into the bounce buffer ({@link #copyBack} returns it).
     */
    private long address(MemorySegment segment, long at, int length) {
        Objects.checkFromIndexSize(at, length, segment.byteSize());
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException("the datagram's memory was already freed");
        }
        if (segment.isNative()) {
            return segment.address() + at;
        }
        if (length > bounce.byteSize()) {
            throw new IllegalArgumentException(length + " bytes exceed the engine's " + bounce.byteSize());
        }
        MemorySegment.copy(segment, at, bounce, 0, length);
        return bounce.address();
    }

    private void copyBack(MemorySegment segment, long at, int length) {
        if (!segment.isNative()) {
            MemorySegment.copy(bounce, 0, segment, at, length);
        }
    }

    /** Sets the nonce on the seal or open context and feeds it {@code aad} (copied into native memory: 42 bytes). */
    private void start(boolean seal, byte[] aad, int ranks, long sequence) throws Throwable {
        if (aad.length > MAX_AAD_BYTES) {
            throw new IllegalArgumentException("associated data of " + aad.length + " bytes exceeds "
                    + MAX_AAD_BYTES);
        }
        nonce.set(BE_INT, 0, ranks);
        nonce.set(BE_LONG, 4, sequence);
        MemorySegment.copy(aad, 0, aadCopy, ValueLayout.JAVA_BYTE, 0, aad.length);
        if (!arena.scope().isAlive()) {
            throw new IllegalStateException("this OpenSSL AES-GCM engine was closed");
        }
        if (seal) {
            check((int) Lib.ENCRYPT_INIT_IV.invokeExact(sealCtxAt, 0L, 0L, 0L, nonceAt), "EVP_EncryptInit_ex (nonce)");
        } else {
            check((int) Lib.DECRYPT_INIT_IV.invokeExact(openCtxAt, 0L, 0L, 0L, nonceAt), "EVP_DecryptInit_ex (nonce)");
        }
        if (aad.length > 0) {
            aad(seal, aadAt, aad.length);
        }
    }

    /** GMAC's associated data after the header: the data in place, then the sequence number behind the tag. */
    private void authenticate(boolean seal, long data, int length) throws Throwable {
        if (length > 0) {
            aad(seal, data, length);
        }
        aad(seal, data + length + TAG_BYTES, WireSeal.SEQUENCE_BYTES);
    }

    /** Feeds {@code length} bytes at {@code bytes} as associated data (output NULL) to the seal or the open context. */
    private void aad(boolean seal, long bytes, int length) throws Throwable {
        if (seal) {
            check((int) Lib.ENCRYPT_UPDATE.invokeExact(sealCtxAt, 0L, outLengthAt, bytes, length), "EVP_EncryptUpdate (aad)");
        } else {
            check((int) Lib.DECRYPT_UPDATE.invokeExact(openCtxAt, 0L, outLengthAt, bytes, length), "EVP_DecryptUpdate (aad)");
        }
    }

    /** Completes a seal and writes its tag at {@code tag}. */
    private void finishSeal(long tag) throws Throwable {
        check((int) Lib.ENCRYPT_FINAL.invokeExact(sealCtxAt, finalOutAt, outLengthAt), "EVP_EncryptFinal_ex");
        check((int) Lib.CTRL.invokeExact(sealCtxAt, EVP_CTRL_AEAD_GET_TAG, TAG_BYTES, tag), "EVP_CIPHER_CTX_ctrl (get tag)");
    }

    /** Hands OpenSSL the received tag; Final then compares it (constant time): 1 = authentic. */
    private boolean finishOpen(long tag) throws Throwable {
        check((int) Lib.CTRL.invokeExact(openCtxAt, EVP_CTRL_AEAD_SET_TAG, TAG_BYTES, tag),
                "EVP_CIPHER_CTX_ctrl (set tag)");
        if ((int) Lib.DECRYPT_FINAL.invokeExact(openCtxAt, finalOutAt, outLengthAt) == 1) {
            return true;
        }
        Lib.CLEAR_ERRORS.invokeExact(); // a forged tag is an outcome, not an error: leave no stale entry behind
        return false;
    }

    private MemorySegment newContext() throws Throwable {
        MemorySegment raw = (MemorySegment) Lib.CTX_NEW.invokeExact();
        if (raw.equals(MemorySegment.NULL)) {
            throw new IllegalStateException("EVP_CIPHER_CTX_new failed: " + errors());
        }
        // Freed with the arena.
        return raw.reinterpret(arena, OpenSslAead::freeContext);
    }

    private static void freeContext(MemorySegment ctx) {
        try {
            Lib.CTX_FREE.invokeExact(ctx);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void check(int result, String call) {
        if (result != 1) {
            throw new IllegalStateException(call + " returned " + result + ": " + errors());
        }
    }

    /** OpenSSL's error queue of this thread as text (emptied). */
    static String errors() {
        StringBuilder text = new StringBuilder();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buffer = a.allocate(256);
            long code;
            while ((code = (long) Lib.GET_ERROR.invokeExact()) != 0) {
                Lib.ERROR_STRING.invokeExact(code, buffer, 256L);
                text.append(text.isEmpty() ? "" : "; ").append(buffer.getString(0));
            }
        } catch (Throwable t) {
            text.append("(reading OpenSSL's error queue failed: ").append(t).append(')');
        }
        return text.isEmpty() ? "no OpenSSL error queued" : text.toString();
    }

    @Override
    public void close() {
        cleanable.clean();
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException(t);
    }

    private static String probe() {
        try {
            Lib.AES_256_GCM.type(); // initialises Lib: loads libcrypto and binds every symbol
            return null;
        } catch (Throwable t) {
            Throwable cause = t instanceof ExceptionInInitializerError && t.getCause() != null ? t.getCause() : t;
            return "libcrypto.so.3 could not be loaded or bound (" + cause + ")";
        }
    }

    /** The libcrypto functions used, bound when first needed; a missing library fails this class's initialisation. */
    static final class Lib {
        private static final Linker LINKER = Linker.nativeLinker();
        private static final SymbolLookup CRYPTO = SymbolLookup.libraryLookup("libcrypto.so.3", Arena.global());
        private static final Linker.Option CRITICAL = Linker.Option.critical(false);

        static final MethodHandle CTX_NEW = handle("EVP_CIPHER_CTX_new", FunctionDescriptor.of(ADDRESS));
        static final MethodHandle CTX_FREE = handle("EVP_CIPHER_CTX_free", FunctionDescriptor.ofVoid(ADDRESS));
        static final MethodHandle AES_256_GCM = handle("EVP_aes_256_gcm", FunctionDescriptor.of(ADDRESS));
        static final MethodHandle ENCRYPT_INIT = critical("EVP_EncryptInit_ex",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
        static final MethodHandle DECRYPT_INIT = critical("EVP_DecryptInit_ex",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
        // The data pointers (out, in, tag) are raw addresses (JAVA_LONG): see address().
        static final MethodHandle ENCRYPT_INIT_IV = critical("EVP_EncryptInit_ex",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        static final MethodHandle DECRYPT_INIT_IV = critical("EVP_DecryptInit_ex",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        static final MethodHandle ENCRYPT_UPDATE = critical("EVP_EncryptUpdate",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT));
        static final MethodHandle DECRYPT_UPDATE = critical("EVP_DecryptUpdate",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT));
        static final MethodHandle ENCRYPT_FINAL = critical("EVP_EncryptFinal_ex",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        static final MethodHandle DECRYPT_FINAL = critical("EVP_DecryptFinal_ex",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        static final MethodHandle CTRL = critical("EVP_CIPHER_CTX_ctrl",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG));
        static final MethodHandle CLEAR_ERRORS = handle("ERR_clear_error", FunctionDescriptor.ofVoid());
        static final MethodHandle GET_ERROR = handle("ERR_get_error", FunctionDescriptor.of(JAVA_LONG));
        static final MethodHandle ERROR_STRING = handle("ERR_error_string_n",
                FunctionDescriptor.ofVoid(JAVA_LONG, ADDRESS, JAVA_LONG));

        private static MethodHandle handle(String name, FunctionDescriptor descriptor) {
            return LINKER.downcallHandle(CRYPTO.findOrThrow(name), descriptor);
        }

        private static MethodHandle critical(String name, FunctionDescriptor descriptor) {
            return LINKER.downcallHandle(CRYPTO.findOrThrow(name), descriptor, CRITICAL);
        }
    }
}
