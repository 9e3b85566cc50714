package io.xaforward.gateway;

import org.junit.jupiter.api.Test;

import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/** The metrics endpoint on loopback: stalled clients do not block a scrape. */
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

    @Test
    void connectionsBeyondTheCapAreClosedAndSlotsFreeAfterTheReadTimeout() throws Exception {
        try (MetricsServer m = new MetricsServer("127.0.0.1", 0, () -> "xaf_up 1\n")) {
            List<Socket> stalled = new ArrayList<>();
            try {
                for (int i = 0; i < MetricsServer.MAX_CONNECTIONS; i++) stalled.add(new Socket("127.0.0.1", m.port()));
                Thread.sleep(300);
                String refused;
                try {
                    refused = get(m.port(), "/metrics");
                } catch (java.io.IOException e) {
                    refused = "";
                }
                assertEquals("", refused, "every slot is taken: closed at once, no answer");
                Thread.sleep(MetricsServer.REQUEST_DEADLINE_MS + 500);
                assertTrue(get(m.port(), "/metrics").startsWith("HTTP/1.1 200 OK"), "stalled clients were timed out");
            } finally {
                for (Socket s : stalled) s.close();
            }
        }
    }

    @Test
    void clientsTricklingTheirRequestAreDroppedAtTheWholeRequestDeadline() throws Exception {
        try (MetricsServer m = new MetricsServer("127.0.0.1", 0, () -> "xaf_up 1\n")) {
            List<Socket> tricklers = new ArrayList<>();
            java.util.concurrent.atomic.AtomicInteger dropped = new java.util.concurrent.atomic.AtomicInteger();
            Thread trickle = null;
            try {
                for (int i = 0; i < MetricsServer.MAX_CONNECTIONS; i++) tricklers.add(new Socket("127.0.0.1", m.port()));
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
                Thread.sleep(MetricsServer.REQUEST_DEADLINE_MS + 1000);
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
