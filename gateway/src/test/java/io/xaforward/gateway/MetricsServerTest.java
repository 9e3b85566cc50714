package io.xaforward.gateway;

import org.junit.jupiter.api.Test;

import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.*;

/** The metrics endpoint on loopback: idle, stalled, trickling and non-reading clients do not block a scrape. */
class MetricsServerTest {
    static String get(int port, String path) throws Exception {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
            s.setSoTimeout(1000); // well under the server's read timeout: a stalled endpoint fails this
            OutputStream out = s.getOutputStream();
            out.write(("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @Test
    void idleAndHalfSentConnectionsDoNotBlockAScrape() throws Exception {
        try (MetricsServer m = new MetricsServer("127.0.0.1", 0, () -> "xaf_up 1\n")) {
            List<Socket> stalled = new ArrayList<>();
            try {
                for (int i = 0; i < 8; i++) {
                    Socket s = new Socket("127.0.0.1", m.port());
                    // half a request: a server that reads headers on a shared thread waits here for ever
                    if (i % 2 == 0) s.getOutputStream().write("GET /metrics HTTP/1.1\r\n".getBytes(StandardCharsets.US_ASCII));
                    stalled.add(s);
                }
                Thread.sleep(200);
                String reply = get(m.port(), "/metrics");
                assertTrue(reply.startsWith("HTTP/1.1 200 OK"), reply);
                assertTrue(reply.endsWith("\r\n\r\nxaf_up 1\n"), reply);
            } finally {
                for (Socket s : stalled) s.close();
            }
        }
    }

    /**
     * More idle connections than any slot count, and a client that asks for a large answer and never reads it: a
     * scraper from the same address is still answered in full, every idle connection is closed by the server
     * (pushed out by newer ones or at the request deadline), and so is the one that does not read its answer (at
     * the response deadline, before it got the whole answer).
     */
    @Test
    void idleClientsAndASlowReaderDoNotStopAScrapeAndAreClosed() throws Exception {
        // Larger than any socket buffer on the way: a client that does not read leaves the answer unwritten.
        String big = "xaf_up 1\n# " + "x".repeat(16 << 20) + "\n";
        int answerBytes = big.length() + 200; // the head is shorter than 200 bytes
        MetricsServer.Limits limits = new MetricsServer.Limits(MetricsServer.MAX_CONNECTIONS,
                MetricsServer.MAX_CONNECTIONS_PER_ADDRESS, Duration.ofMillis(500), Duration.ofSeconds(1));
        try (MetricsServer m = new MetricsServer("127.0.0.1", 0, () -> big, limits)) {
            List<Socket> idle = new ArrayList<>();
            Socket slow = new Socket();
            try {
                slow.setReceiveBufferSize(4096);
                slow.connect(new InetSocketAddress("127.0.0.1", m.port()), 1000);
                slow.getOutputStream().write("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                for (int i = 0; i < 100; i++) idle.add(new Socket("127.0.0.1", m.port()));

                String reply = get(m.port(), "/metrics");
                assertTrue(reply.startsWith("HTTP/1.1 200 OK"), reply.substring(0, Math.min(80, reply.length())));
                assertTrue(reply.endsWith("\r\n\r\n" + big), "the whole answer");

                for (Socket s : idle) assertClosedByServer(s);
                // The slow reader is closed at its response deadline: the server then holds no connection.
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (m.openConnections() > 0 && System.nanoTime() < until) Thread.sleep(20);
                assertEquals(0, m.openConnections(), "every connection closed by the server");
                slow.setSoTimeout(10_000);
                long got = slow.getInputStream().transferTo(OutputStream.nullOutputStream());
                assertTrue(got < answerBytes - 200, "closed before its answer was complete: " + got + " bytes");
            } catch (java.net.SocketException reset) {
                // the slow reader's connection reset while it read the rest: closed by the server as well
                assertEquals(0, m.openConnections());
            } finally {
                slow.close();
                for (Socket s : idle) s.close();
            }
        }
    }

    /**
     * A connection the server closed: reading ends (end of stream or a reset) instead of waiting; a generous
     * socket timeout turns an open one into a failure.
     */
    private static void assertClosedByServer(Socket s) throws Exception {
        s.setSoTimeout(30_000);
        try {
            assertEquals(-1, s.getInputStream().read(), "no answer to an idle connection, only its end");
        } catch (java.net.SocketTimeoutException e) {
            fail("an idle connection is still open");
        } catch (java.net.SocketException reset) {
            // closed with a reset: closed all the same
        }
    }

    /** One address at its limit pushes out its own oldest idle connection, never another address's. */
    @Test
    void oneAddressAtItsLimitPushesOutOnlyItsOwnIdleConnections() throws Exception {
        MetricsServer.Limits limits = new MetricsServer.Limits(8, 4, Duration.ofSeconds(60), Duration.ofSeconds(60));
        try (MetricsServer m = new MetricsServer("127.0.0.1", 0, () -> "xaf_up 1\n", limits)) {
            List<Socket> other = new ArrayList<>(), own = new ArrayList<>();
            try {
                for (int i = 0; i < 4; i++) other.add(connectFrom("127.0.0.2", m.port()));
                for (int i = 0; i < 12; i++) own.add(connectFrom("127.0.0.3", m.port()));
                // The server accepts in order: 127.0.0.3's first 8 were pushed out by its later 4, at its limit.
                for (int i = 0; i < 8; i++) assertClosedByServer(own.get(i));
                // 8 open, the overall limit: a scrape from 127.0.0.1 pushes out the oldest idle one (127.0.0.2's first).
                String reply = get(m.port(), "/metrics");
                assertTrue(reply.startsWith("HTTP/1.1 200 OK"), reply);
                assertClosedByServer(other.get(0));
                for (Socket s : other.subList(1, 4)) {
                    s.getOutputStream().write("GET /metrics HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                    s.setSoTimeout(5000);
                    String r = new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
                    assertTrue(r.startsWith("HTTP/1.1 200 OK"), "127.0.0.2's later connections survived 127.0.0.3: " + r);
                }
            } finally {
                for (Socket s : other) s.close();
                for (Socket s : own) s.close();
            }
        }
    }

    private static Socket connectFrom(String source, int port) throws Exception {
        Socket s = new Socket();
        s.bind(new InetSocketAddress(source, 0));
        s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
        return s;
    }

    @Test
    void clientsTricklingTheirRequestAreDroppedAtTheWholeRequestDeadline() throws Exception {
        try (MetricsServer m = new MetricsServer("127.0.0.1", 0, () -> "xaf_up 1\n")) {
            List<Socket> tricklers = new ArrayList<>();
            java.util.concurrent.atomic.AtomicInteger dropped = new java.util.concurrent.atomic.AtomicInteger();
            Thread trickle = null;
            try {
                for (int i = 0; i < 64; i++) tricklers.add(new Socket("127.0.0.1", m.port()));
                // One byte of a never-ending header every 300 ms: each read returns well inside any per-read
                // timeout, so only a deadline on the whole request frees the slots.
                trickle = Thread.ofPlatform().daemon(true).start(() -> {
                    boolean[] gone = new boolean[tricklers.size()];
                    while (!Thread.currentThread().isInterrupted()) {
                        for (int i = 0; i < tricklers.size(); i++) {
                            if (gone[i]) continue;
                            try {
                                tricklers.get(i).getOutputStream().write('X');
                                tricklers.get(i).getOutputStream().flush();
                            } catch (java.io.IOException e) {
                                gone[i] = true;
                                dropped.incrementAndGet();
                            }
                        }
                        try {
                            Thread.sleep(300);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                });
                Thread.sleep(MetricsServer.REQUEST_DEADLINE.toMillis() + 1000);
                String reply = get(m.port(), "/metrics");
                assertTrue(reply.startsWith("HTTP/1.1 200 OK"), "a scrape is served while clients trickle: " + reply);
                long deadline = System.currentTimeMillis() + 5000;
                while (dropped.get() < tricklers.size() && System.currentTimeMillis() < deadline) Thread.sleep(100);
                assertEquals(tricklers.size(), dropped.get(), "every trickling client is closed by the server");
            } finally {
                if (trickle != null) trickle.interrupt();
                for (Socket s : tricklers) s.close();
            }
        }
    }

    @Test
    void otherPathsAndFailuresAreClearAnswers() throws Exception {
        try (MetricsServer m = new MetricsServer("127.0.0.1", 0, () -> { throw new IllegalStateException("map gone"); })) {
            assertTrue(get(m.port(), "/").startsWith("HTTP/1.1 404"));
            String failed = get(m.port(), "/metrics");
            assertTrue(failed.startsWith("HTTP/1.1 500") && failed.contains("error: map gone"), failed);
        }
    }
}
