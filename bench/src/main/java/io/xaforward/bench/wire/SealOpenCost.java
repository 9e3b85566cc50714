package io.xaforward.bench.wire;

import com.sun.management.ThreadMXBean;
import io.xaforward.protocol.XafHeader;
import io.xaforward.transport.JobSecret;
import io.xaforward.transport.RunNonce;
import io.xaforward.transport.WireSeal;
import io.xaforward.transport.WireSecurity;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.DigestException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * What one datagram's seal plus open costs through {@link WireSeal}, per mode and per AES-GCM library: crc32c, mac
 * (AES-256-GMAC from OpenSSL, from the JDK, and the HMAC-SHA256 mac it replaced), encrypt (AES-256-GCM from
 * OpenSSL and from the JDK). Each variant runs in a JVM of its own ({@code -Dxaf.wire.crypto} picks the library
 * there), the runs interleaved across variants and the median kept: in one JVM whichever runs first shapes the
 * JIT's profile of the shared code.
 */
public final class SealOpenCost {
    /**
     * One measured variant: ns per seal + open of one datagram in wall-clock time and in the thread's CPU time (on a
     * shared machine the second leaves out the time other processes held the core), bytes allocated per datagram.
     */
    public record Row(String variant, String library, double nanos, double cpuNanos, double allocatedBytes) {}

    /** What is measured: the mode, the library (the xaf.wire.crypto value; null for none), and a label. */
    enum Variant {
        CRC32C("crc32c", WireSecurity.CRC32C, null),
        MAC_HMAC_BEFORE("mac before: HMAC-SHA256/128 (JDK MessageDigest)", WireSecurity.CRC32C, null),
        MAC_OPENSSL("mac: AES-256-GMAC", WireSecurity.MAC, "openssl"),
        MAC_JDK("mac: AES-256-GMAC", WireSecurity.MAC, "jdk"),
        ENCRYPT_OPENSSL("encrypt: AES-256-GCM", WireSecurity.ENCRYPT, "openssl"),
        ENCRYPT_JDK("encrypt: AES-256-GCM", WireSecurity.ENCRYPT, "jdk");

        final String label;
        final WireSecurity mode;
        final String library;

        Variant(String label, WireSecurity mode, String library) {
            this.label = label;
            this.mode = mode;
            this.library = library;
        }

        String libraryName() {
            return library == null ? "-" : library.equals("openssl") ? "OpenSSL libcrypto (FFM)" : "JDK javax.crypto";
        }
    }

    private SealOpenCost() {}

    /** Every variant at {@code payload} bytes (trailer included), {@code runs} interleaved runs of a JVM each. */
    public static List<Row> measure(int payload, int datagrams, int runs) throws IOException, InterruptedException {
        Variant[] variants = Variant.values();
        double[][] nanos = new double[variants.length][runs];
        double[][] cpuNanos = new double[variants.length][runs];
        double[] allocated = new double[variants.length];
        for (int run = 0; run < runs; run++) {
            for (Variant v : variants) {
                double[] measured = measureInFreshJvm(v, payload, datagrams);
                nanos[v.ordinal()][run] = measured[0];
                cpuNanos[v.ordinal()][run] = measured[1];
                allocated[v.ordinal()] = Math.max(allocated[v.ordinal()], measured[2]);
            }
        }
        List<Row> rows = new ArrayList<>();
        for (Variant v : variants) {
            rows.add(new Row(v.label, v.libraryName(), median(nanos[v.ordinal()]), median(cpuNanos[v.ordinal()]),
                    allocated[v.ordinal()]));
        }
        return rows;
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    private static double[] measureInFreshJvm(Variant v, int payload, int datagrams)
            throws IOException, InterruptedException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        List<String> command = new ArrayList<>(List.of(java.toString(), "--enable-native-access=ALL-UNNAMED"));
        if (v.library != null) {
            command.add("-Dxaf.wire.crypto=" + v.library);
        }
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), SealOpenCost.class.getName(), "--one",
                v.name(), Integer.toString(payload), Integer.toString(datagrams)));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        if (process.waitFor() != 0) {
            throw new IOException("measuring " + v + " failed: " + output);
        }
        String[] fields = output.substring(output.lastIndexOf('\n') + 1).split(" ");
        return new double[] {Double.parseDouble(fields[0]), Double.parseDouble(fields[1]),
                Double.parseDouble(fields[2])};
    }

    /** {wall nanos, CPU nanos, allocated bytes} per datagram of {@code v} in this JVM: as many datagrams again warm the JIT up. */
    static double[] measureHere(Variant v, int payload, int datagrams) {
        RunNonce run = RunNonce.generate();
        JobSecret secret = JobSecret.generate();
        try (WireSeal sender = WireSeal.of(v.mode, secret, 1, run, XafHeader.LENGTH + payload);
             WireSeal receiver = WireSeal.of(v.mode, secret, 1, run, XafHeader.LENGTH + payload)) {
            if (v.library != null && !v.library.equals(sender.aeadLibrary())) {
                throw new IllegalStateException(v + " wants " + v.library + ", the seal runs " + sender.aeadLibrary()
                        + " (set -Dxaf.wire.crypto=" + v.library + ")");
            }
            HmacBefore hmac = v == Variant.MAC_HMAC_BEFORE ? new HmacBefore() : null;
            int trailer = hmac != null ? WireSeal.TRAILER_BYTES : sender.trailerLength();
            int data = payload - trailer;
            MemorySegment datagram = Arena.ofAuto().allocate(XafHeader.LENGTH + payload, 64);
            for (int i = 0; i < data; i++) {
                datagram.set(ValueLayout.JAVA_BYTE, XafHeader.LENGTH + i, (byte) (i * 31));
            }
            // The seal's own trailer length in the header: the HMAC variant appends its trailer to crc32c's data.
            new XafHeader().wrap(datagram, 0).init().type(1).flags(sender.flags()).jobId(1).srcRank(0).dstRank(1)
                    .step(1).chunkCount(1).payloadLength(payload);
            ByteBuffer view = datagram.asByteBuffer();
            ThreadMXBean threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();
            long seq = WireSeal.initialSequence(new Random(1));
            double[] result = new double[3];
            for (int pass = 0; pass < 2; pass++) { // pass 0 warms the JIT up
                long allocatedBefore = threads.getCurrentThreadAllocatedBytes();
                long cpuStart = threads.getCurrentThreadCpuTime();
                long start = System.nanoTime();
                for (int i = 0; i < datagrams; i++) {
                    seq++;
                    if (hmac != null) {
                        // What mac did before: HMAC over the covered header, data and sequence, then crc32c's work.
                        datagram.set(HmacBefore.BE_LONG, XafHeader.LENGTH + data + WireSeal.TAG_BYTES, seq);
                        hmac.tag(datagram, view, data, XafHeader.LENGTH + data);
                        sender.seal(datagram, payload, seq);
                        if (receiver.open(datagram, 0, payload) != WireSeal.OPENED
                                || !hmac.verify(datagram, view, data)) {
                            throw new IllegalStateException("an HMAC-sealed datagram did not open");
                        }
                    } else {
                        sender.seal(datagram, data, seq);
                        if (receiver.open(datagram, 0, payload) != WireSeal.OPENED) {
                            throw new IllegalStateException(v + ": a sealed datagram did not open");
                        }
                    }
                }
                long nanos = System.nanoTime() - start;
                result[0] = (double) nanos / datagrams;
                result[1] = (double) (threads.getCurrentThreadCpuTime() - cpuStart) / datagrams;
                result[2] = (double) (threads.getCurrentThreadAllocatedBytes() - allocatedBefore) / datagrams;
            }
            return result;
        }
    }

    /** HMAC-SHA256 truncated to 128 bits by hand over two digests, as WireSeal's mac mode computed it until now. */
    private static final class HmacBefore {
        static final ValueLayout.OfLong BE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
        private final MessageDigest inner;
        private final MessageDigest outer;
        private final byte[] innerPad = new byte[64];
        private final byte[] outerPad = new byte[64];
        private final byte[] hash = new byte[32];
        private final byte[] header = new byte[XafHeader.CHECKED_HEADER_LENGTH];

        HmacBefore() {
            try {
                inner = MessageDigest.getInstance("SHA-256");
                outer = MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
            for (int i = 0; i < 64; i++) {
                byte k = i < 32 ? (byte) (7 * i + 1) : 0;
                innerPad[i] = (byte) (k ^ 0x36);
                outerPad[i] = (byte) (k ^ 0x5c);
            }
        }

        /** Writes the tag at {@code tagAt}. */
        void tag(MemorySegment datagram, ByteBuffer view, int data, long tagAt) {
            compute(datagram, view, data);
            MemorySegment.copy(hash, 0, datagram, ValueLayout.JAVA_BYTE, tagAt, WireSeal.TAG_BYTES);
        }

        boolean verify(MemorySegment datagram, ByteBuffer view, int data) {
            compute(datagram, view, data);
            int diff = 0;
            for (int i = 0; i < WireSeal.TAG_BYTES; i++) {
                diff |= hash[i] ^ datagram.get(ValueLayout.JAVA_BYTE, XafHeader.LENGTH + data + i);
            }
            return diff == 0;
        }

        private void compute(MemorySegment datagram, ByteBuffer view, int data) {
            MemorySegment.copy(datagram, ValueLayout.JAVA_BYTE, 0, header, 0, header.length);
            header[XafHeader.HOP_LIMIT_OFFSET] = 0;
            int dataAt = XafHeader.LENGTH;
            int seqAt = dataAt + data + WireSeal.TAG_BYTES;
            try {
                inner.update(innerPad);
                inner.update(header);
                inner.update(view.clear().limit(dataAt + data).position(dataAt));
                inner.update(view.clear().limit(seqAt + WireSeal.SEQUENCE_BYTES).position(seqAt));
                inner.digest(hash, 0, 32);
                outer.update(outerPad);
                outer.update(hash, 0, 32);
                outer.digest(hash, 0, 32);
            } catch (DigestException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /** The Markdown table of {@code rows}. */
    static String table(List<Row> rows) {
        StringBuilder md = new StringBuilder("| variant | library | CPU ns per seal + open | wall ns per seal + open "
                + "| B allocated/datagram |\n|---|---|---:|---:|---:|\n");
        for (Row r : rows) {
            md.append(String.format(Locale.ROOT, "| %s | %s | %.0f | %.0f | %.0f |%n", r.variant(), r.library(),
                    r.cpuNanos(), r.nanos(), r.allocatedBytes()));
        }
        return md.toString();
    }

    /**
     * {@code --one VARIANT PAYLOAD DATAGRAMS}: measures one variant here and prints "wall-nanos cpu-nanos allocated-bytes" (what
     * {@link #measure} runs in each fresh JVM). {@code [PAYLOAD [DATAGRAMS [RUNS]]]}: prints the table.
     */
    public static void main(String[] args) throws Exception {
        if (args.length == 4 && args[0].equals("--one")) {
            double[] r = measureHere(Variant.valueOf(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]));
            System.out.println(r[0] + " " + r[1] + " " + r[2]);
            return;
        }
        int payload = args.length > 0 ? Integer.parseInt(args[0]) : 1400;
        int datagrams = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
        int runs = args.length > 2 ? Integer.parseInt(args[2]) : 3;
        System.out.print(table(measure(payload, datagrams, runs)));
    }
}
