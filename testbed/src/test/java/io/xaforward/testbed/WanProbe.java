package io.xaforward.testbed;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.util.Arrays;
import java.util.BitSet;

/**
 * Traffic for the WAN delay line tests, run inside host namespaces through {@link Netns#javaProcessBuilder}:
 * <ul>
 * <li>{@code rtt ADDR PORT COUNT INTERVAL_MS}: a UDP ping-pong against {@link UdpEcho}; prints
 *     {@code RTT median_us=.. p10_us=.. p90_us=.. answered=..};</li>
 * <li>{@code sink PORT IDLE_MS [EXPECTED]}: counts numbered datagrams until none came for IDLE_MS after the first;
 *     prints {@code SINK received=.. duplicates=.. out_of_order=.. first_ns=.. last_ns=.. bytes=.. unique=..
 *     loss_runs=..} (runs of consecutive numbers below EXPECTED that never arrived);</li>
 * <li>{@code blast ADDR PORT COUNT PAYLOAD PPS}: sends COUNT numbered datagrams of PAYLOAD bytes, paced at PPS;
 *     prints {@code SENT n};</li>
 * <li>{@code tcpsink PORT}: takes one TCP connection, reads it to the end; prints {@code TCP bytes=.. crc=.. ns=..}
 *     (ns from the first byte to the last);</li>
 * <li>{@code tcpsend ADDR PORT BYTES}: sends BYTES of a fixed pattern over TCP; prints {@code TCP bytes=.. crc=..}.</li>
 * </ul>
 */
public final class WanProbe {
    private WanProbe() {}

    public static void main(String[] args) throws IOException, InterruptedException {
        switch (args[0]) {
            case "rtt" -> rtt(InetAddress.getByName(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]), Integer.parseInt(args[4]));
            case "sink" -> sink(Integer.parseInt(args[1]), Integer.parseInt(args[2]), args.length > 3 ? Integer.parseInt(args[3]) : 0);
            case "blast" -> blast(InetAddress.getByName(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]),
                    Integer.parseInt(args[4]), Integer.parseInt(args[5]));
            case "tcpsink" -> tcpSink(Integer.parseInt(args[1]));
            case "tcpsend" -> tcpSend(InetAddress.getByName(args[1]), Integer.parseInt(args[2]), Long.parseLong(args[3]));
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    private static void rtt(InetAddress to, int port, int count, int intervalMs) throws IOException, InterruptedException {
        try (var s = new java.net.DatagramSocket()) {
            s.setSoTimeout(1000);
            InetSocketAddress target = new InetSocketAddress(to, port);
            long[] rtts = new long[count];
            int answered = 0;
            byte[] out = new byte[16];
            byte[] in = new byte[64];
            for (int seq = 0; seq < count; seq++) {
                ByteBuffer.wrap(out).putLong(seq).putLong(System.nanoTime());
                long sent = System.nanoTime();
                s.send(new java.net.DatagramPacket(out, out.length, target));
                var p = new java.net.DatagramPacket(in, in.length);
                try {
                    while (true) {
                        s.receive(p);
                        if (p.getLength() == 16 && ByteBuffer.wrap(in).getLong() == seq) break;
                    }
                    rtts[answered++] = System.nanoTime() - sent;
                } catch (SocketTimeoutException e) {
                    // lost or too late: not counted
                }
                Thread.sleep(intervalMs);
            }
            long[] got = Arrays.copyOf(rtts, answered);
            Arrays.sort(got);
            if (answered == 0) {
                System.out.println("RTT answered=0");
                return;
            }
            System.out.printf("RTT median_us=%d p10_us=%d p90_us=%d answered=%d%n", got[answered / 2] / 1000,
                    got[answered / 10] / 1000, got[answered * 9 / 10] / 1000, answered);
        }
    }

    private static void sink(int port, int idleMs, int expected) throws IOException {
        try (DatagramChannel ch = DatagramChannel.open()) {
            ch.setOption(StandardSocketOptions.SO_RCVBUF, 16 << 20);
            ch.bind(new InetSocketAddress(port));
            ch.socket().setSoTimeout(idleMs);
            System.out.println("ready");
            System.out.flush();
            ByteBuffer buf = ByteBuffer.allocate(65536);
            BitSet seen = new BitSet();
            long received = 0, duplicates = 0, outOfOrder = 0, bytes = 0, first = 0, last = 0;
            long highest = -1;
            var socket = ch.socket();
            byte[] raw = new byte[65536];
            var packet = new java.net.DatagramPacket(raw, raw.length);
            while (true) {
                try {
                    socket.receive(packet);
                } catch (SocketTimeoutException e) {
                    if (received > 0) break;
                    continue;
                }
                long now = System.nanoTime();
                if (received == 0) first = now;
                last = now;
                received++;
                bytes += packet.getLength();
                long seq = ByteBuffer.wrap(raw, 0, 8).getLong();
                if (seen.get((int) seq)) duplicates++;
                seen.set((int) seq);
                if (seq < highest) outOfOrder++;
                highest = Math.max(highest, seq);
            }
            // Runs of consecutive missing numbers among the expected ones: how bursty the loss was.
            long lossRuns = 0;
            for (int i = seen.nextClearBit(0); i < expected; i = seen.nextClearBit(seen.nextSetBit(i) < 0 ? expected : seen.nextSetBit(i))) {
                lossRuns++;
                if (seen.nextSetBit(i) < 0) break;
            }
            System.out.printf("SINK received=%d duplicates=%d out_of_order=%d first_ns=%d last_ns=%d bytes=%d unique=%d loss_runs=%d%n",
                    received, duplicates, outOfOrder, first, last, bytes, seen.cardinality(), lossRuns);
        }
    }

    private static void tcpSink(int port) throws IOException {
        try (var server = new java.net.ServerSocket(port)) {
            System.out.println("ready");
            System.out.flush();
            try (var s = server.accept(); var in = s.getInputStream()) {
                var crc = new java.util.zip.CRC32();
                byte[] buf = new byte[1 << 16];
                long bytes = 0, first = 0;
                for (int n; (n = in.read(buf)) > 0; ) {
                    if (bytes == 0) first = System.nanoTime();
                    crc.update(buf, 0, n);
                    bytes += n;
                }
                System.out.printf("TCP bytes=%d crc=%d ns=%d%n", bytes, crc.getValue(), System.nanoTime() - first);
            }
        }
    }

    private static void tcpSend(InetAddress to, int port, long total) throws IOException {
        try (var s = new java.net.Socket(to, port); var out = s.getOutputStream()) {
            var crc = new java.util.zip.CRC32();
            byte[] buf = new byte[1 << 16];
            new java.util.Random(42).nextBytes(buf);
            for (long sent = 0; sent < total; ) {
                int n = (int) Math.min(buf.length, total - sent);
                out.write(buf, 0, n);
                crc.update(buf, 0, n);
                sent += n;
            }
            System.out.printf("TCP bytes=%d crc=%d%n", total, crc.getValue());
        }
    }

    private static void blast(InetAddress to, int port, int count, int payload, int pps) throws IOException {
        try (DatagramChannel ch = DatagramChannel.open()) {
            ch.connect(new InetSocketAddress(to, port));
            ByteBuffer buf = ByteBuffer.allocateDirect(payload);
            long start = System.nanoTime();
            double gap = 1e9 / pps;
            for (int seq = 0; seq < count; seq++) {
                long due = start + (long) (seq * gap);
                // Park while the wait is long, spin only its last 50 µs: paced without holding a core of a shared machine.
                for (long wait; (wait = due - System.nanoTime()) > 0; ) {
                    if (wait > 50_000) java.util.concurrent.locks.LockSupport.parkNanos(wait - 50_000);
                    else Thread.onSpinWait();
                }
                buf.clear();
                buf.putLong(0, seq);
                ch.write(buf);
            }
            System.out.println("SENT " + count);
        }
    }
}
