package io.xaforward.cluster.agent;

import io.xaforward.collective.Algorithm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The agent's socket under bad input: random, truncated and oversized frames from strangers, and malformed or
 * out-of-range requests from its own client. It answers errors (or hangs up on a connection whose framing broke),
 * never dies, and afterwards still serves well-formed collectives and a clean bye.
 */
class AgentProtocolFuzzTest {
    private static final long SHM = 64 << 10;

    @TempDir
    Path dir;

    @Test
    void badInputGetsErrorsAndTheAgentKeepsServing() throws Exception {
        try (LoopbackAgents agents = new LoopbackAgents(dir, new int[]{0, 1}, Algorithm.HIERARCHICAL, SHM,
                Duration.ofSeconds(30)).awaitSockets(Duration.ofSeconds(30))) {
            Path socket = agents.sockets.get(0);
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)));
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(agents.segments.get(0))));
            Random random = new Random(20261205);

            for (int i = 0; i < 300; i++) strangerSends(socket, random, i);
            assertStillServing(agents);

            try (AgentTestClient a = new AgentTestClient(socket); AgentTestClient b = new AgentTestClient(agents.sockets.get(1))) {
                assertError(a.send(AgentTestClient.allreduce(1, 0, 4, 0, "x")), 1, "send hello first");
                assertError(a.send(AgentTestClient.hello(2, 99)), 2, "protocol version 99");
                AgentTestClient.Reply hello = a.send(AgentTestClient.hello(3, AgentProtocol.VERSION));
                assertTrue(hello.ok(), String.valueOf(hello.message()));
                assertEquals(0, hello.body().getInt());
                assertEquals(2, hello.body().getInt());
                assertEquals(0, hello.body().getInt());
                assertEquals(SHM, hello.body().getLong());
                assertTrue(b.send(AgentTestClient.hello(1, AgentProtocol.VERSION)).ok());

                try (AgentTestClient intruder = new AgentTestClient(socket)) {
                    assertError(intruder.send(AgentTestClient.hello(7, AgentProtocol.VERSION)), 7, "already serves pid");
                }
                assertError(a.send(AgentTestClient.hello(4, AgentProtocol.VERSION)), 4, "already sent");
                assertError(a.send(AgentTestClient.allreduce(5, SHM - 8, 4, 0, "end")), 5, "past the shared segment");
                assertError(a.send(AgentTestClient.allreduce(6, 6, 1, 0, "odd")), 6, "multiple of 4");
                assertError(a.send(AgentTestClient.allreduce(7, 0, 1, 7, "op")), 7, "op 7 is unknown");
                assertError(a.send(AgentTestClient.allreduce(8, Long.MIN_VALUE, 1, 0, "neg")), 8, "multiple of 4");
                assertError(a.send(AgentTestClient.allreduce(9, 0, -1, 0, "huge")), 9, "exceeds");
                assertError(a.send(AgentTestClient.broadcast(10, 0, 1, 2, "root")), 10, "root 2 is outside 0..1");
                assertError(a.send(AgentTestClient.frame(99, 11, new byte[3])), 11, "request type 99 is unknown");
                assertError(a.send(AgentTestClient.frame(AgentProtocol.BARRIER, 12, new byte[1])), 12, "1 trailing bytes");
                assertError(a.send(AgentTestClient.frame(AgentProtocol.ALLREDUCE, 13,
                        ByteBuffer.allocate(17).order(ByteOrder.LITTLE_ENDIAN).putLong(0).putInt(0).put((byte) 0)
                                .putShort((short) 2).put((byte) 0xC3).put((byte) 0x28).array())), 13, "not UTF-8");
                assertError(a.send(AgentTestClient.frame(AgentProtocol.BROADCAST, 14, new byte[5])), 14, "needs 18 bytes");
                for (int i = 0; i < 200; i++) {
                    byte[] body = new byte[random.nextInt(40)];
                    random.nextBytes(body);
                    int type = random.nextBoolean() ? 6 + random.nextInt(250) : 0;
                    AgentTestClient.Reply r = a.send(AgentTestClient.frame(type, 100 + i, body));
                    assertError(r, 100 + i, "unknown");
                }
                assertStillServing(agents);

                try (Arena arena = Arena.ofShared()) {
                    MemorySegment shm0 = map(agents.segments.get(0), arena), shm1 = map(agents.segments.get(1), arena);
                    for (int i = 0; i < 4; i++) {
                        shm0.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, i);
                        shm1.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, 10 * i);
                    }
                    // a queued all-reduce holds its bytes: an overlapping request is refused at once
                    a.write(AgentTestClient.allreduce(500, 0, 4, AgentProtocol.OP_SUM, "good"));
                    assertError(a.send(AgentTestClient.allreduce(501, 8, 4, AgentProtocol.OP_SUM, "overlap")), 501,
                            "overlap request 500");
                    assertTrue(b.send(AgentTestClient.allreduce(500, 0, 4, AgentProtocol.OP_SUM, "good")).ok());
                    AgentTestClient.Reply done = a.read();
                    assertEquals(500, done.id());
                    assertTrue(done.ok(), done.message());
                    for (int i = 0; i < 4; i++) {
                        assertEquals(11f * i, shm0.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i));
                        assertEquals(11f * i, shm1.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i));
                    }

                    // ranks that disagree get an error naming both sides, and the job goes on
                    a.write(AgentTestClient.allreduce(600, 0, 4, AgentProtocol.OP_SUM, "w"));
                    AgentTestClient.Reply other = b.send(AgentTestClient.allreduce(600, 0, 8, AgentProtocol.OP_AVERAGE, "w"));
                    assertError(other, 600, "differs across ranks: this rank (1) issued allreduce 'w' of 8 floats (average), rank 0 issued allreduce of 4 floats (sum)");
                    assertError(a.read(), 600, "rank 1 issued allreduce of 8 floats (average)");

                    a.write(AgentTestClient.broadcast(700, 0, 4, 1, "bcast"));
                    assertTrue(b.send(AgentTestClient.broadcast(700, 0, 4, 1, "bcast")).ok());
                    assertTrue(a.read().ok());
                }
                a.write(AgentTestClient.frame(AgentProtocol.BYE, 800, new byte[0]));
                assertTrue(b.send(AgentTestClient.frame(AgentProtocol.BYE, 800, new byte[0])).ok());
                assertTrue(a.read().ok());
            }
            assertEquals(0, agents.exits.get(0).get(30, TimeUnit.SECONDS));
            assertEquals(0, agents.exits.get(1).get(30, TimeUnit.SECONDS));
            assertFalse(Files.exists(socket), "the socket is removed at the end");
            assertFalse(Files.exists(agents.segments.get(0)), "the shared segment is removed at the end");
        }
    }

    /** One connection that never says hello: random bytes, a cut frame, an oversized length, or stray requests. */
    private static void strangerSends(Path socket, Random random, int i) throws IOException {
        try (AgentTestClient c = new AgentTestClient(socket)) {
            switch (i % 5) {
                case 0 -> {
                    byte[] junk = new byte[random.nextInt(9000)];
                    random.nextBytes(junk);
                    writeQuietly(c, junk);
                }
                case 1 -> {
                    byte[] frame = AgentTestClient.allreduce(i, 0, 4, 0, "cut");
                    writeQuietly(c, Arrays.copyOf(frame, random.nextInt(frame.length)));
                }
                case 2 -> {
                    c.write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(AgentProtocol.MAX_FRAME + 1 + random.nextInt(1 << 20)).array());
                    AgentTestClient.Reply r = c.read();
                    assertNotNull(r);
                    assertTrue(r.message().contains("exceeds the 4096-byte limit"), r.message());
                    assertNull(c.read(), "the agent hangs up on a connection whose framing broke");
                }
                case 3 -> {
                    assertError(c.send(AgentTestClient.broadcast(i, 0, 1, 0, "early")), i, "send hello first");
                    assertError(c.send(AgentTestClient.frame(AgentProtocol.BYE, i + 1, new byte[0])), i + 1, "send hello first");
                }
                default -> {
                    byte[] body = new byte[random.nextInt(3)];
                    assertError(c.send(shortFrame(body)), 0, "shorter than the 5-byte request header");
                }
            }
        }
    }

    private static byte[] shortFrame(byte[] body) {
        return ByteBuffer.allocate(4 + body.length).order(ByteOrder.LITTLE_ENDIAN).putInt(body.length).put(body).array();
    }

    private static void writeQuietly(AgentTestClient c, byte[] bytes) {
        try {
            c.write(bytes);
        } catch (IOException e) {
            // the agent may already have hung up on an oversized length: that is an allowed answer
        }
    }

    private static void assertError(AgentTestClient.Reply r, int id, String text) {
        assertNotNull(r, "a reply, not a closed connection");
        assertEquals(AgentProtocol.ERROR, r.status(), "request " + id + " should fail with '" + text + "'");
        assertEquals(id, r.id());
        assertTrue(r.message().contains(text), "'" + r.message() + "' should contain '" + text + "'");
    }

    private static void assertStillServing(LoopbackAgents agents) {
        for (int r = 0; r < agents.size; r++) {
            assertFalse(agents.exits.get(r).isDone(), "rank " + r + "'s agent is still serving");
            assertTrue(Files.exists(agents.sockets.get(r)));
        }
    }

    private static MemorySegment map(Path file, Arena arena) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            return ch.map(FileChannel.MapMode.READ_WRITE, 0, SHM, arena);
        }
    }
}
