package io.xaforward.transport;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * An in-memory network in simulated time for tests of long paths: each endpoint's uplink sends at {@code rate} bits
 * per second into a bottleneck queue of {@code queueBytes} (tail drop), then the datagram flies for the one-way
 * {@code delay} and arrives; a seeded fraction {@code lossRate} is lost on the way. Time is a {@link SimulatedClock}
 * the test advances ({@link #nextArrivalNanos()}), so a 20 ms round trip at 1 Gbit/s is exact whatever the machine.
 * Linux cannot delay packets here (no netem), so latency is tested in memory.
 */
final class DelayedNetwork {
    /** Time that only moves when the test says so. */
    static final class SimulatedClock implements NanoClock {
        private long now = 1_000_000_000L;

        @Override
        public long nanoTime() { return now; }

        void advanceTo(long nanos) { now = Math.max(now, nanos); }
    }

    private record Frame(byte[] bytes, int from, long arrivalNanos) {}

    private final SimulatedClock clock;
    private final double bitsPerNano;
    private final long delayNanos;
    private final long queueBytes;
    private final double lossRate;
    private final Random random;
    private final List<Endpoint> endpoints = new ArrayList<>();
    long delivered, lost, queueDrops;

    DelayedNetwork(SimulatedClock clock, long bitsPerSecond, long oneWayDelayNanos, long queueBytes, double lossRate,
                   long seed) {
        this.clock = clock;
        this.bitsPerNano = bitsPerSecond / 1e9;
        this.delayNanos = oneWayDelayNanos;
        this.queueBytes = queueBytes;
        this.lossRate = lossRate;
        this.random = new Random(seed);
    }

    Endpoint newEndpoint() {
        Endpoint e = new Endpoint(endpoints.size(), new Uplink());
        endpoints.add(e);
        return e;
    }

    /** An endpoint that sends through {@code other}'s uplink and bottleneck queue: flows of both share it. */
    Endpoint newEndpointSharingUplink(Endpoint other) {
        Endpoint e = new Endpoint(endpoints.size(), other.uplink);
        endpoints.add(e);
        return e;
    }

    /** A bottleneck: when it has sent everything queued so far. */
    private static final class Uplink {
        long freeNanos;
    }

    /**
     * Sends {@code data} from {@code sender} to {@code receiver} (ranks 0 and 1 of the same job) and runs both in
     * simulated time until the message is sent and received: when neither has work, time jumps to the next arrival
     * or {@code tickNanos} on (pacing tokens, delayed ACKs, retransmission timers). Returns the simulated seconds
     * from the send to the end; fails past {@code limitNanos}.
     */
    double transfer(ReliableTransport sender, ReliableTransport receiver, MessageId id, MemorySegment data,
                    MemorySegment dest, long tickNanos, long limitNanos) {
        var received = receiver.expect(0, id, dest);
        sender.doWork();
        receiver.doWork();
        long start = clock.nanoTime();
        var sent = sender.send(1, id, data);
        while (!(sent.isDone() && received.isDone())) {
            if (sender.doWork() + receiver.doWork() == 0) {
                clock.advanceTo(Math.min(nextArrivalNanos(), clock.nanoTime() + tickNanos));
            }
            if (clock.nanoTime() - start >= limitNanos) {
                throw new AssertionError("simulated time ran past " + limitNanos / 1_000_000_000L + " s");
            }
        }
        sent.join();
        received.join();
        return (clock.nanoTime() - start) / 1e9;
    }

    /** The earliest arrival still in flight, or Long.MAX_VALUE. */
    long nextArrivalNanos() {
        long next = Long.MAX_VALUE;
        for (Endpoint e : endpoints) if (!e.inbound.isEmpty()) next = Math.min(next, e.inbound.peekFirst().arrivalNanos());
        return next;
    }

    final class Endpoint implements DatagramPort {
        private final int id;
        private final LoopbackNetwork.Address address;
        private final ArrayDeque<Frame> inbound = new ArrayDeque<>();
        private final MemorySegment receiveBuffer = MemorySegment.ofArray(new byte[65_536]);
        private final Uplink uplink;
        private Frame current;

        Endpoint(int id, Uplink uplink) {
            this.id = id;
            this.uplink = uplink;
            this.address = new LoopbackNetwork.Address(id);
        }

        @Override
        public int maxDatagramLength() { return 65_507; }

        @Override
        public boolean send(MemorySegment buffer, long offset, int length, Peer destination) {
            long now = clock.nanoTime();
            long start = Math.max(now, uplink.freeNanos);
            if ((start - now) * bitsPerNano / 8 > queueBytes) {
                queueDrops++; // the bottleneck queue is full: tail drop
                return true;
            }
            long departure = start + (long) Math.ceil(length * 8 / bitsPerNano);
            uplink.freeNanos = departure;
            if (random.nextDouble() < lossRate) {
                lost++;
                return true;
            }
            byte[] bytes = buffer.asSlice(offset, length).toArray(ValueLayout.JAVA_BYTE);
            int to = ((LoopbackNetwork.Address) destination).id();
            endpoints.get(to).inbound.addLast(new Frame(bytes, id, departure + delayNanos));
            return true;
        }

        @Override
        public int poll(DatagramHandler handler, int limit) {
            int n = 0;
            long now = clock.nanoTime();
            while (n < limit && !inbound.isEmpty() && inbound.peekFirst().arrivalNanos() <= now) {
                current = inbound.pollFirst();
                MemorySegment.copy(current.bytes(), 0, receiveBuffer, ValueLayout.JAVA_BYTE, 0, current.bytes().length);
                handler.onDatagram(receiveBuffer, 0, current.bytes().length);
                delivered++;
                n++;
            }
            return n;
        }

        @Override
        public boolean receivedFrom(Peer peer) {
            return peer instanceof LoopbackNetwork.Address(int from) && from == current.from();
        }

        @Override
        public Peer localPeer() { return address; }

        @Override
        public void close() { }
    }
}
