package io.xaforward.cluster.deploy;

import io.xaforward.collective.CollectiveConfig;
import io.xaforward.collective.CollectiveGroup;
import io.xaforward.collective.Collectives;
import io.xaforward.collective.WireDtype;
import io.xaforward.transport.AddressBook;
import io.xaforward.transport.DatagramHandler;
import io.xaforward.transport.DatagramPort;
import io.xaforward.transport.JobSecret;
import io.xaforward.transport.Peer;
import io.xaforward.transport.ReliableTransport;
import io.xaforward.transport.RunNonce;
import io.xaforward.transport.TransportConfig;
import io.xaforward.transport.WireSecurity;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * How the ranks of one run of an {@code xaf worker} job agree on the run's {@link RunNonce}, from which their wire
 * keys are derived (docs/PROTOCOL.md "Wire security"). Workers are started independently (by hand, by a service
 * manager, by one {@code xaf launch} per host, restarted one host at a time), so no single launcher can hand them a
 * nonce; they make one together on the wire at start-up, the same way whether the world came from a cluster file or
 * an etcd rendezvous:
 * <ol>
 *   <li>every rank draws 16 fresh random bytes, its contribution;</li>
 *   <li>a transport keyed for the start-up exchange ({@link RunNonce#STARTUP}) all-reduces a vector with one
 *       16-byte slot per rank, each rank filling its own slot: every rank ends with all contributions, and only
 *       once every rank of the world is up;</li>
 *   <li>the run nonce is {@link RunNonce#combine} of the contributions in rank order; the start-up transport
 *       lingers until its peers are done with it, then gives the port to the run's transport.</li>
 * </ol>
 * A rank's run nonce covers its own fresh contribution, so its keys are new in every run whatever arrives on the
 * wire: a datagram recorded in an earlier run, the start-up exchange's included, can at worst make ranks disagree,
 * and then their first collective fails with authentication failures instead of accepting anything old. A rank
 * restarted with {@code xaf launch --max-restarts} comes back into the start-up exchange, which completes only when
 * every rank has (re)started into it, so all ranks re-key together.
 */
public final class RunAgreement {
    /** The all-reduce step of the exchange, apart from the training steps and the resume agreement. */
    static final int EXCHANGE_STEP = 0x7FFF_0100;

    private RunAgreement() {}

    /**
     * Runs the start-up exchange over {@code port} (which stays open for the caller) and returns the run nonce.
     *
     * @param config  a fresh transport configuration of this rank each time it is called
     * @param timeout how long to wait for every rank to join the exchange
     */
    public static RunNonce agree(CollectiveGroup group, Supplier<TransportConfig.Builder> config, WireSecurity mode,
                                 JobSecret secret, AddressBook book, DatagramPort port, Duration timeout) {
        int world = group.worldSize();
        byte[] mine = RunNonce.randomBytes();
        TransportConfig startup = config.get().wireSecurity(mode, secret, RunNonce.STARTUP).build();
        int jobId = startup.jobId();
        List<byte[]> contributions = new ArrayList<>(world);
        try (ReliableTransport transport = new ReliableTransport(startup, book, new Borrowed(port)).start()) {
            try (Arena arena = Arena.ofShared();
                 Collectives collectives = new Collectives(group, transport, CollectiveConfig.defaults()
                         .withOperationTimeout(timeout).withWireDtype(WireDtype.FP32))) {
                // Bytes as floats 0..255, each slot summed with zeros only: the sum is exact.
                int count = world * RunNonce.LENGTH;
                MemorySegment v = arena.allocate((long) count * Float.BYTES, 64);
                for (int i = 0; i < RunNonce.LENGTH; i++) {
                    v.setAtIndex(ValueLayout.JAVA_FLOAT, (long) group.rank() * RunNonce.LENGTH + i, Byte.toUnsignedInt(mine[i]));
                }
                try {
                    collectives.allReduce(v, count, Collectives.Op.SUM, EXCHANGE_STEP);
                } catch (RuntimeException e) {
                    throw explained(e, transport, mode);
                }
                for (int r = 0; r < world; r++) {
                    byte[] c = new byte[RunNonce.LENGTH];
                    for (int i = 0; i < RunNonce.LENGTH; i++) {
                        float f = v.getAtIndex(ValueLayout.JAVA_FLOAT, (long) r * RunNonce.LENGTH + i);
                        if (f != Math.rint(f) || f < 0 || f > 255) {
                            throw new IllegalStateException("start-up exchange: rank " + r + "'s contribution is not bytes");
                        }
                        c[i] = (byte) (int) f;
                    }
                    contributions.add(c);
                }
            }
            // A peer whose last acknowledgement from us was lost retransmits: answer until it is quiet (longer
            // than its largest retransmission timeout), then the run's transport takes the port.
            Duration idle = startup.maxRto().multipliedBy(2).compareTo(Duration.ofSeconds(1)) > 0
                    ? startup.maxRto().multipliedBy(2) : Duration.ofSeconds(1);
            transport.linger(idle, idle.multipliedBy(3));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted during the start-up exchange", e);
        }
        if (!java.util.Arrays.equals(contributions.get(group.rank()), mine)) {
            throw new IllegalStateException("start-up exchange: this rank's own contribution came back altered");
        }
        return RunNonce.combine(jobId, contributions);
    }

    /**
     * A peer with another secret (or wire security mode) looks like a silent peer: its datagrams are dropped. When
     * any were dropped for failing authentication, say so instead of only "timed out".
     */
    private static RuntimeException explained(RuntimeException e, ReliableTransport transport, WireSecurity mode) {
        long failures = transport.stats().authFailures();
        if (failures == 0) return e;
        return new IllegalStateException("start-up exchange: " + e.getMessage() + "; " + failures
                + " datagrams failed authentication (wire security " + mode.configName() + "): the peers use another"
                + " job secret or --wire-security; every rank needs the same --secret-file and mode", e);
    }

    /** The caller's port, lent to the start-up transport: closing that transport leaves the port open. */
    private static final class Borrowed implements DatagramPort {
        private final DatagramPort port;

        Borrowed(DatagramPort port) {
            this.port = port;
        }

        @Override public int maxDatagramLength() { return port.maxDatagramLength(); }
        @Override public boolean send(MemorySegment buffer, long offset, int length, Peer destination) {
            return port.send(buffer, offset, length, destination);
        }
        @Override public long claim(int length, Peer destination) { return port.claim(length, destination); }
        @Override public boolean supportsClaim() { return port.supportsClaim(); }
        @Override public MemorySegment claimSegment() { return port.claimSegment(); }
        @Override public boolean commitClaim() { return port.commitClaim(); }
        @Override public void flush() { port.flush(); }
        @Override public int poll(DatagramHandler handler, int limit) { return port.poll(handler, limit); }
        @Override public boolean canAwaitReceive() { return port.canAwaitReceive(); }
        @Override public void awaitReceive(long timeoutNanos) { port.awaitReceive(timeoutNanos); }
        @Override public void wakeup() { port.wakeup(); }
        @Override public boolean receivedFrom(Peer peer) { return port.receivedFrom(peer); }
        @Override public Peer localPeer() { return port.localPeer(); }
        @Override public void close() { /* the owner closes the port */ }
    }
}
