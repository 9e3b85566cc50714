package io.xaforward.bench.wire;

import com.sun.management.ThreadMXBean;

import javax.crypto.Cipher;
import javax.crypto.Mac;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.spec.AlgorithmParameterSpec;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.zip.CRC32C;

/**
 * What each way of protecting a datagram costs in this JDK, on one core: per datagram, per GB and in bytes allocated
 * per datagram. The candidates are the primitives a wire-security mode could be built on: CRC32C (no key: corruption
 * only), HMAC-SHA256 (today's {@code mac}, by hand over two digests as WireSeal does it, and through the JDK's Mac),
 * AES-256-GCM (encrypt), GMAC (AES-GCM over associated data only: authentication without encryption) and
 * ChaCha20-Poly1305 (encrypt, and authenticate-only the same way). Each one seals a fresh nonce per datagram, as a
 * sender must (the JDK refuses to reuse a GCM nonce under one key). The datagram sits in direct memory, as in a
 * port; what a candidate must copy to use the JDK counts in its cost.
 */
public final class MacCandidates {
    /** One way of protecting a datagram: seals {@code length} bytes at the start of {@code datagram}. */
    interface Candidate {
        String name();
        /** What it protects against: "corruption", "forgery" or "forgery, eavesdropping". */
        String protects();
        void seal(ByteBuffer datagram, int length, long sequence) throws GeneralSecurityException;
    }

    /** Measured cost of one candidate at one payload size. */
    public record Result(String name, String protects, int payload, double nanosPerDatagram, double gbPerSecond,
                         double bytesAllocatedPerDatagram) {}

    private static final byte[] KEY = new byte[32];
    static {
        for (int i = 0; i < KEY.length; i++) KEY[i] = (byte) (31 * i + 7);
    }

    /** Largest payload measured (a 9000-byte jumbo frame's). */
    static final int MAX_PAYLOAD = 9000;

    private MacCandidates() {}

    /**
     * Seals through a heap array, as an implementation over the port's direct memory has to: the JDK's AEAD ciphers
     * run their intrinsics on arrays (over direct buffers they copy through temporary arrays of their own, measured
     * 2-3 times slower). Copies the datagram in, encrypts in place (or takes it as associated data and encrypts
     * nothing), copies ciphertext and tag back.
     */
    static void sealThroughArray(Cipher cipher, byte[] work, boolean authenticateOnly, ByteBuffer datagram,
                                 int length) throws GeneralSecurityException {
        datagram.get(0, work, 0, length);
        if (authenticateOnly) {
            cipher.updateAAD(work, 0, length);
            int tag = cipher.doFinal(work, 0, 0, work, length);
            datagram.put(length, work, length, tag);
        } else {
            int sealed = cipher.doFinal(work, 0, length, work, 0);
            datagram.put(0, work, 0, sealed);
        }
    }

    /** Every candidate, freshly keyed. */
    static List<Candidate> candidates() {
        try {
            return List.of(new Crc32c(), new HmacSha256ByHand(), new JdkHmacSha256(), new AesGcm(false),
                    new AesGcm(true), new ChaCha20Poly1305(false), new ChaCha20Poly1305(true));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("this JDK lacks a candidate's algorithm", e);
        }
    }

    /**
     * Measures every candidate at {@code payload} bytes, each in a JVM of its own ({@code runs} times, interleaved;
     * the median run is kept): in one JVM the candidates share the JDK's cipher code, and whichever runs first shapes
     * the JIT's profile for the others (measured: up to 5x apart depending on the order).
     */
    public static List<Result> measure(int payload, int datagrams, int runs) throws IOException, InterruptedException {
        List<Candidate> candidates = candidates();
        double[][] nanos = new double[candidates.size()][runs];
        double[] allocated = new double[candidates.size()];
        for (int run = 0; run < runs; run++) {
            for (int i = 0; i < candidates.size(); i++) {
                double[] measured = measureInFreshJvm(i, payload, datagrams);
                nanos[i][run] = measured[0];
                allocated[i] = Math.max(allocated[i], measured[1]);
            }
        }
        List<Result> results = new ArrayList<>();
        for (int i = 0; i < candidates.size(); i++) {
            double[] sorted = nanos[i].clone();
            Arrays.sort(sorted);
            double median = sorted[sorted.length / 2];
            Candidate c = candidates.get(i);
            results.add(new Result(c.name(), c.protects(), payload, median, payload / median, allocated[i]));
        }
        return results;
    }

    private static double[] measureInFreshJvm(int candidate, int payload, int datagrams)
            throws IOException, InterruptedException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process process = new ProcessBuilder(java.toString(), "-cp", System.getProperty("java.class.path"),
                MacCandidates.class.getName(), "--one", Integer.toString(candidate), Integer.toString(payload),
                Integer.toString(datagrams)).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        if (process.waitFor() != 0) {
            throw new IOException("measuring " + candidates().get(candidate).name() + " failed: " + output);
        }
        String[] fields = output.substring(output.lastIndexOf('\n') + 1).split(" ");
        return new double[] {Double.parseDouble(fields[0]), Double.parseDouble(fields[1])};
    }

    static Result measure(Candidate candidate, int payload, int datagrams) {
        if (payload > MAX_PAYLOAD) {
            throw new IllegalArgumentException("payload of " + payload + " bytes exceeds " + MAX_PAYLOAD);
        }
        ByteBuffer datagram = ByteBuffer.allocateDirect(payload + 64);
        for (int i = 0; i < payload; i++) datagram.put(i, (byte) i);
        ThreadMXBean threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();
        long sequence = 1;
        try {
            for (int i = 0; i < datagrams; i++) candidate.seal(datagram, payload, sequence++); // JIT warm-up
            long allocatedBefore = threads.getCurrentThreadAllocatedBytes();
            long start = System.nanoTime();
            for (int i = 0; i < datagrams; i++) candidate.seal(datagram, payload, sequence++);
            long nanos = System.nanoTime() - start;
            long allocated = threads.getCurrentThreadAllocatedBytes() - allocatedBefore;
            double perDatagram = (double) nanos / datagrams;
            return new Result(candidate.name(), candidate.protects(), payload, perDatagram, payload / perDatagram,
                    (double) allocated / datagrams);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(candidate.name() + " failed", e);
        }
    }

    /** The 12-byte nonce of datagram {@code sequence}: 4 fixed bytes and the sequence number, never repeated. */
    static void nonce(byte[] nonce, long sequence) {
        nonce[0] = 0x58;
        for (int i = 0; i < 8; i++) nonce[4 + i] = (byte) (sequence >>> (56 - 8 * i));
    }

    static final class Crc32c implements Candidate {
        private final CRC32C crc = new CRC32C();
        public String name() { return "crc32c"; }
        public String protects() { return "corruption"; }
        public void seal(ByteBuffer datagram, int length, long sequence) {
            crc.reset();
            crc.update(datagram.limit(length).position(0));
            datagram.clear().putInt(length, (int) crc.getValue());
        }
    }

    /** HMAC-SHA256 over two digests, as WireSeal's mac mode: no allocation per datagram. */
    static final class HmacSha256ByHand implements Candidate {
        private final MessageDigest inner;
        private final MessageDigest outer;
        private final byte[] innerPad = new byte[64];
        private final byte[] outerPad = new byte[64];
        private final byte[] hash = new byte[32];

        HmacSha256ByHand() throws GeneralSecurityException {
            inner = MessageDigest.getInstance("SHA-256");
            outer = MessageDigest.getInstance("SHA-256");
            for (int i = 0; i < 64; i++) {
                byte k = i < KEY.length ? KEY[i] : 0;
                innerPad[i] = (byte) (k ^ 0x36);
                outerPad[i] = (byte) (k ^ 0x5c);
            }
        }
        public String name() { return "hmac-sha256 (mac today)"; }
        public String protects() { return "forgery"; }
        public void seal(ByteBuffer datagram, int length, long sequence) throws GeneralSecurityException {
            inner.update(innerPad);
            inner.update(datagram.limit(length).position(0));
            inner.digest(hash, 0, 32);
            outer.update(outerPad);
            outer.update(hash, 0, 32);
            outer.digest(hash, 0, 32);
            datagram.clear().put(length, hash, 0, 16);
        }
    }

    static final class JdkHmacSha256 implements Candidate {
        private final Mac mac = Mac.getInstance("HmacSHA256");
        private final byte[] tag = new byte[32];

        JdkHmacSha256() throws GeneralSecurityException {
            mac.init(new SecretKeySpec(KEY, "HmacSHA256"));
        }
        public String name() { return "hmac-sha256 (JDK Mac)"; }
        public String protects() { return "forgery"; }
        public void seal(ByteBuffer datagram, int length, long sequence) throws GeneralSecurityException {
            mac.update(datagram.limit(length).position(0));
            mac.doFinal(tag, 0);
            datagram.clear().put(length, tag, 0, 16);
        }
    }

    /**
     * An AEAD through the JDK's Cipher: encrypts the payload in place, or (authenticate-only) takes it as associated
     * data and encrypts nothing, so the tag alone protects it (GMAC for AES-GCM, Poly1305 for ChaCha20-Poly1305).
     */
    abstract static class Aead implements Candidate {
        private final Cipher cipher;
        private final SecretKeySpec key;
        private final boolean authenticateOnly;
        private final byte[] nonce = new byte[12];
        private final byte[] work = new byte[MAX_PAYLOAD + 16];

        Aead(String transformation, String keyAlgorithm, boolean authenticateOnly) throws GeneralSecurityException {
            this.cipher = Cipher.getInstance(transformation);
            this.key = new SecretKeySpec(KEY, keyAlgorithm);
            this.authenticateOnly = authenticateOnly;
        }

        boolean authenticateOnly() { return authenticateOnly; }
        public String protects() { return authenticateOnly ? "forgery" : "forgery, eavesdropping"; }

        /** The cipher's parameters for this nonce (a fresh object per datagram, as the JDK's API wants). */
        abstract AlgorithmParameterSpec parameters(byte[] nonce);

        public void seal(ByteBuffer datagram, int length, long sequence) throws GeneralSecurityException {
            nonce(nonce, sequence);
            cipher.init(Cipher.ENCRYPT_MODE, key, parameters(nonce));
            sealThroughArray(cipher, work, authenticateOnly, datagram, length);
        }
    }

    static final class AesGcm extends Aead {
        AesGcm(boolean authenticateOnly) throws GeneralSecurityException {
            super("AES/GCM/NoPadding", "AES", authenticateOnly);
        }
        public String name() { return authenticateOnly() ? "gmac (aes-256-gcm, data as AAD)" : "aes-256-gcm"; }
        AlgorithmParameterSpec parameters(byte[] nonce) { return new GCMParameterSpec(128, nonce); }
    }

    static final class ChaCha20Poly1305 extends Aead {
        ChaCha20Poly1305(boolean authenticateOnly) throws GeneralSecurityException {
            super("ChaCha20-Poly1305", "ChaCha20", authenticateOnly);
        }
        public String name() {
            return authenticateOnly() ? "poly1305 (chacha20-poly1305, data as AAD)" : "chacha20-poly1305";
        }
        AlgorithmParameterSpec parameters(byte[] nonce) { return new IvParameterSpec(nonce); }
    }

    /**
     * {@code --one INDEX PAYLOAD DATAGRAMS}: measures one candidate and prints "nanos-per-datagram bytes-allocated"
     * (what {@link #measure(int, int, int)} runs in each fresh JVM). {@code [PAYLOAD [DATAGRAMS]]}: prints the table.
     */
    public static void main(String[] args) throws Exception {
        if (args.length == 4 && args[0].equals("--one")) {
            Result r = measure(candidates().get(Integer.parseInt(args[1])), Integer.parseInt(args[2]),
                    Integer.parseInt(args[3]));
            System.out.println(r.nanosPerDatagram() + " " + r.bytesAllocatedPerDatagram());
            return;
        }
        int payload = args.length > 0 ? Integer.parseInt(args[0]) : 1400;
        int datagrams = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
        for (Result r : measure(payload, datagrams, 1)) {
            System.out.printf(Locale.ROOT, "%-45s %6d B %9.0f ns %7.2f GB/s %8.1f B alloc%n", r.name(),
                    r.payload(), r.nanosPerDatagram(), r.gbPerSecond(), r.bytesAllocatedPerDatagram());
        }
    }
}
