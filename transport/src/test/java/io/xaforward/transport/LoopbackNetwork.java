package io.xaforward.transport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An in-memory datagram network for tests: every {@link Endpoint} is a {@link DatagramPort}, and the network can lose,
 * duplicate, reorder and corrupt datagrams with a seeded {@link Random}, so reliability is exercised deterministically
 * (up to thread scheduling) without sockets. Frames are copied into pooled byte arrays on send and copied into the
 * receiving endpoint's own buffer on poll, like a real NIC would, so a sender may reuse its buffer at once.
 */
public final class LoopbackNetwork {

    /**
     * Fault injection rates, each a probability per datagram in [0, 1). Reordering swaps a datagram with the one queued
     * before it at the receiver; corruption flips one payload bit (the XAF header is left intact so the packet still
     * reaches the CRC check).
     */
    public record Impairments(double lossRate, double duplicateRate, double reorderRate, double corruptRate) {
        public static final Impairments NONE = new Impairments(0, 0, 0, 0);

        public Impairments {
            check("lossRate", lossRate);
            check("duplicateRate", duplicateRate);
            check("reorderRate", reorderRate);
            check("corruptRate", corruptRate);
        }

        private static void check(String name, double rate) {
            if (!(rate >= 0 && rate < 1)) {
                throw new IllegalArgumentException(name + " must be in [0, 1), was " + rate);
            }
        }
    }

    /** In-memory address of an endpoint. */
    public record Address(int id) implements Peer {
    }

    private static final int HEADER_BYTES_UNTOUCHED = 48;

    private final Object lock = new Object();
    private final Random random;
    private final int maxDatagramLength;
    private final int queueCapacity;
    private final List<Endpoint> endpoints = new ArrayList<>();
    private final ArrayDeque<Frame> freeFrames = new ArrayDeque<>();
    private volatile Impairments impairments;

    private final AtomicLong delivered = new AtomicLong();
    private final AtomicLong lost = new AtomicLong();
    private final AtomicLong duplicated = new AtomicLong();
    private final AtomicLong reordered = new AtomicLong();
    private final AtomicLong corrupted = new AtomicLong();
    private final AtomicLong overflowDrops = new AtomicLong();

    public LoopbackNetwork(Impairments impairments, long seed) {
        this(impairments, seed, 9000, 1 << 16);
    }

    /**
     * @param maxDatagramLength largest frame an endpoint accepts
     * @param queueCapacity     datagrams an endpoint may hold before further ones are dropped (a full NIC ring)
     */
    public LoopbackNetwork(Impairments impairments, long seed, int maxDatagramLength, int queueCapacity) {
        this.impairments = impairments;
        this.random = new Random(seed);
        this.maxDatagramLength = maxDatagramLength;
        this.queueCapacity = queueCapacity;
    }

    /** Changes the fault rates from now on (e.g. a link that starts losing packets mid-test). */
    public void impairments(Impairments impairments) {
        this.impairments = impairments;
    }

    public Endpoint newEndpoint() {
        synchronized (lock) {
            Endpoint endpoint = new Endpoint(new Address(endpoints.size()));
            endpoints.add(endpoint);
            return endpoint;
        }
    }

    public long delivered() { return delivered.get(); }
    public long lost() { return lost.get(); }
    public long duplicated() { return duplicated.get(); }
    public long reordered() { return reordered.get(); }
    public long corrupted() { return corrupted.get(); }
    public long overflowDrops() { return overflowDrops.get(); }

    private static final class Frame {
        final byte[] data;
        int length;
        int source;

        Frame(int capacity) {
            data = new byte[capacity];
        }
    }

    private Frame takeFrame() {
        Frame frame = freeFrames.pollFirst();
        return frame != null ? frame : new Frame(maxDatagramLength);
    }

    private void transmit(MemorySegment buffer, long offset, int length, Address from, Address to) {
        Impairments imp = impairments;
        synchronized (lock) {
            if (to.id() < 0 || to.id() >= endpoints.size()) {
                lost.incrementAndGet();
                return;
            }
            Endpoint target = endpoints.get(to.id());
            if (target.closed || imp.lossRate() > 0 && random.nextDouble() < imp.lossRate()) {
                lost.incrementAndGet();
                return;
            }
            int copies = imp.duplicateRate() > 0 && random.nextDouble() < imp.duplicateRate() ? 2 : 1;
            if (copies == 2) {
                duplicated.incrementAndGet();
            }
            for (int c = 0; c < copies; c++) {
                if (target.inbox.size() >= queueCapacity) {
                    overflowDrops.incrementAndGet();
                    return;
                }
                Frame frame = takeFrame();
                MemorySegment.copy(buffer, ValueLayout.JAVA_BYTE, offset, frame.data, 0, length);
                frame.length = length;
                frame.source = from.id();
                if (length > HEADER_BYTES_UNTOUCHED && imp.corruptRate() > 0
                        && random.nextDouble() < imp.corruptRate()) {
                    int at = HEADER_BYTES_UNTOUCHED + random.nextInt(length - HEADER_BYTES_UNTOUCHED);
                    frame.data[at] ^= (byte) (1 << random.nextInt(8));
                    corrupted.incrementAndGet();
                }
                if (!target.inbox.isEmpty() && imp.reorderRate() > 0 && random.nextDouble() < imp.reorderRate()) {
                    Frame earlier = target.inbox.pollLast();
                    target.inbox.addLast(frame);
                    target.inbox.addLast(earlier);
                    reordered.incrementAndGet();
                } else {
                    target.inbox.addLast(frame);
                }
            }
        }
    }

    /** One attachment point on the network; a {@link DatagramPort} with its own receive buffer. */
    public final class Endpoint implements DatagramPort {
        private final Address address;
        private final ArrayDeque<Frame> inbox = new ArrayDeque<>();
        private final MemorySegment receiveBuffer = Arena.ofAuto().allocate(maxDatagramLength, 64);
        /** The sending endpoint of the datagram being delivered, -1 outside a handler call. */
        private int receivedFrom = -1;
        private volatile boolean closed;

        private Endpoint(Address address) {
            this.address = address;
        }

        @Override
        public int maxDatagramLength() {
            return maxDatagramLength;
        }

        @Override
        public boolean send(MemorySegment buffer, long offset, int length, Peer destination) {
            if (!(destination instanceof Address to)) {
                throw new IllegalArgumentException("loopback endpoint cannot send to " + destination);
            }
            if (length > maxDatagramLength) {
                throw new IllegalArgumentException("datagram of " + length + " bytes exceeds the port limit of "
                        + maxDatagramLength + " bytes");
            }
            if (closed) {
                return false;
            }
            transmit(buffer, offset, length, address, to);
            return true;
        }

        @Override
        public int poll(DatagramHandler handler, int limit) {
            int count = 0;
            while (count < limit) {
                int length, source;
                synchronized (lock) {
                    Frame frame = inbox.pollFirst();
                    if (frame == null) {
                        break;
                    }
                    length = frame.length;
                    source = frame.source;
                    MemorySegment.copy(frame.data, 0, receiveBuffer, ValueLayout.JAVA_BYTE, 0, length);
                    freeFrames.addLast(frame);
                }
                delivered.incrementAndGet();
                receivedFrom = source;
                try {
                    handler.onDatagram(receiveBuffer, 0, length);
                } finally {
                    receivedFrom = -1;
                }
                count++;
            }
            return count;
        }

        @Override
        public boolean receivedFrom(Peer peer) {
            return peer instanceof Address(int id) && id == receivedFrom;
        }

        @Override
        public Address localPeer() {
            return address;
        }

        @Override
        public void close() {
            closed = true;
        }
    }
}
