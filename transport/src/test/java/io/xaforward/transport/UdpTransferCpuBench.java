package io.xaforward.transport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;

/**
 * Endpoint CPU per datagram over real UDP sockets on loopback, both transports driven by this one thread (their
 * event loops called in turn, as SteadyStateTransfer does), so the thread's CPU time (user and kernel, including the
 * loopback's softirq work done in its context) is all the two endpoints cost: a figure the emulated network and the
 * scheduler do not blur. Moves 16 MB messages rank 0 -> rank 1, crc32c, and prints the CPU per datagram event
 * (datagrams sent plus received by both ends, as the all-reduce bench counts them).
 * {@code java -cp ... io.xaforward.transport.UdpTransferCpuBench [rounds] [ackEveryChunks]}
 * (docs/bench/endpoint-cost.md).
 */
public final class UdpTransferCpuBench {
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 12;
        int ackEvery = args.length > 1 ? Integer.parseInt(args[1]) : 0;
        var mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        JobSecret secret = JobSecret.of(new byte[32]);
        RunNonce run = RunNonce.generate();
        InetAddress loopback = InetAddress.getByName("127.0.0.1");
        UdpDatagramPort port0 = new UdpDatagramPort(new InetSocketAddress(loopback, 0));
        UdpDatagramPort port1 = new UdpDatagramPort(new InetSocketAddress(loopback, 0));
        AddressBook book = AddressBook.builder().add(0, 1, port0.localPeer()).add(1, 2, port1.localPeer()).build();
        TransportConfig.Builder b0 = TransportConfig.builder(0, 42, 1).wireSecurity(WireSecurity.CRC32C, secret, run);
        TransportConfig.Builder b1 = TransportConfig.builder(1, 42, 1).wireSecurity(WireSecurity.CRC32C, secret, run);
        if (ackEvery > 0) {
            b0.delayedAcks(ackEvery, java.time.Duration.ofMillis(1));
            b1.delayedAcks(ackEvery, java.time.Duration.ofMillis(1));
        }
        int size = 16 << 20;
        MemorySegment source = Arena.ofAuto().allocate(size, 64);
        MemorySegment dest = Arena.ofAuto().allocate(size, 64);
        double[] perEvent = new double[rounds];
        long allocated = 0, events = 0;
        try (ReliableTransport t0 = new ReliableTransport(b0.build(), book, port0);
             ReliableTransport t1 = new ReliableTransport(b1.build(), book, port1)) {
            for (int r = -3; r < rounds; r++) {
                long packets = t0.stats().packetsSent() + t0.stats().packetsReceived()
                        + t1.stats().packetsSent() + t1.stats().packetsReceived();
                long cpu = mx.getCurrentThreadCpuTime();
                long bytes = mx.getCurrentThreadAllocatedBytes();
                MessageId id = new MessageId(42, r + 10, 0);
                CompletableFuture<Void> received = t1.expect(0, id, dest, FloatSumSink.INSTANCE);
                CompletableFuture<Void> sent = t0.send(1, id, source);
                while (!(received.isDone() && sent.isDone())) {
                    t0.doWork();
                    t1.doWork();
                }
                long n = t0.stats().packetsSent() + t0.stats().packetsReceived()
                        + t1.stats().packetsSent() + t1.stats().packetsReceived() - packets;
                if (r >= 0) {
                    perEvent[r] = (mx.getCurrentThreadCpuTime() - cpu) / 1000.0 / n;
                    allocated += mx.getCurrentThreadAllocatedBytes() - bytes;
                    events += n;
                }
            }
            System.out.printf("acks: %d sent for %d data chunks%n", t1.stats().acksSent(),
                    t0.stats().dataChunksSent());
        }
        Arrays.sort(perEvent);
        System.out.printf("CPU per datagram event: median %.3f us [p25 %.3f, p75 %.3f] over %d rounds of 16 MB;"
                        + " %.2f bytes allocated per datagram event%n", perEvent[rounds / 2], perEvent[rounds / 4],
                perEvent[3 * rounds / 4], rounds, allocated / (double) events);
    }
}
