package io.xaforward.transport;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.*;

/**
 * When the event loop dies (here: a port that refuses the destination, as an AF_XDP port refuses an address of the
 * other IP family), every pending and later send or expect fails at once with the cause, instead of waiting for the
 * acknowledgement timeout.
 */
class EventLoopFailureTest {

    @Test
    void aDeadEventLoopFailsPendingAndLaterMessagesAtOnce() throws Exception {
        InetAddress lo = InetAddress.getLoopbackAddress();
        UdpDatagramPort real = new UdpDatagramPort(new InetSocketAddress(lo, 0));
        DatagramPort refusing = new DatagramPort() {
            public int maxDatagramLength() { return real.maxDatagramLength(); }
            public boolean send(MemorySegment b, long o, int l, Peer d) {
                throw new IllegalArgumentException("this port cannot send to " + d);
            }
            public int poll(DatagramHandler h, int limit) { return real.poll(h, limit); }
            public Peer localPeer() { return real.localPeer(); }
            public void close() { real.close(); }
        };
        UdpDatagramPort other = new UdpDatagramPort(new InetSocketAddress(lo, 0));
        AddressBook book = AddressBook.builder().add(0, 100, real.localPeer()).add(1, 101, other.localPeer()).build();
        TransportConfig config = TransportConfig.builder(0, 5, 77).ackTimeout(Duration.ofSeconds(60)).build();
        try (ReliableTransport t = new ReliableTransport(config, book, refusing).start(); other) {
            MemorySegment data = Arena.ofAuto().allocate(4096);
            var pendingExpect = t.expect(1, new MessageId(5, 1, 0), Arena.ofAuto().allocate(4096));
            var send = t.send(1, new MessageId(5, 2, 0), data);
            var e = assertThrows(ExecutionException.class, () -> send.get(10, TimeUnit.SECONDS));
            assertInstanceOf(IllegalStateException.class, e.getCause());
            assertTrue(e.getCause().getMessage().contains("stopped") && e.getCause().getMessage().contains("cannot send to"),
                    e.getCause().getMessage());
            assertThrows(ExecutionException.class, () -> pendingExpect.get(10, TimeUnit.SECONDS), "the open expect fails too");
            var later = t.send(1, new MessageId(5, 3, 0), data);
            var l = assertThrows(ExecutionException.class, () -> later.get(10, TimeUnit.SECONDS));
            assertTrue(l.getCause().getMessage().contains("stopped"), l.getCause().getMessage());
        }
    }
}
