package io.xaforward.cluster.deploy;

import io.xaforward.collective.CollectiveGroup;
import io.xaforward.transport.AddressBook;
import io.xaforward.transport.DatagramPort;
import io.xaforward.transport.JobSecret;
import io.xaforward.transport.RunNonce;
import io.xaforward.transport.StartupExchange;
import io.xaforward.transport.TransportConfig;
import io.xaforward.transport.WireSecurity;

import java.time.Duration;
import java.util.function.Supplier;

/**
 * How the ranks of one run of an {@code xaf worker} job agree on the run's {@link RunNonce}, from which their wire
 * keys are derived (docs/PROTOCOL.md "Wire security"). Workers are started independently (by hand, by a service
 * manager, by one {@code xaf launch} per host, restarted one host at a time), so no single launcher can hand them a
 * nonce; they make one together on the wire at start-up, the same way whether the world came from a cluster file or
 * an etcd rendezvous: the {@link StartupExchange} (docs/PROTOCOL.md "Start-up exchange").
 * <ol>
 *   <li>every rank draws a fresh 16-byte challenge;</li>
 *   <li>every pair of ranks answers each other's challenge, authenticated under the job's start-up key: a rank
 *       counts a peer as present only on an answer that echoes its own current challenge, so nothing recorded in
 *       an earlier exchange counts, and the exchange completes only once every rank of the world is up in it;</li>
 *   <li>the run nonce is {@link RunNonce#combine} of the challenges in rank order.</li>
 * </ol>
 * A rank's run nonce covers its own fresh challenge, so its keys are new in every run whatever arrives on the wire.
 * A replayed datagram of an earlier exchange is answered at most, never taken; ranks can disagree only when a rank
 * restarts again while the others finish, and then their first collective fails with authentication failures
 * instead of accepting anything old. A rank restarted with {@code xaf launch --max-restarts} comes back into the
 * exchange, which completes only when every rank has (re)started into it, so all ranks re-key together.
 */
public final class RunAgreement {
    private RunAgreement() {}

    /**
     * Runs the start-up exchange over {@code port} (which stays open for the caller) and returns the run nonce.
     *
     * @param config  this rank's transport configuration (its rank, job id and token are used)
     * @param timeout how long to wait for every rank to join the exchange
     */
    public static RunNonce agree(CollectiveGroup group, Supplier<TransportConfig.Builder> config, WireSecurity mode,
                                 JobSecret secret, AddressBook book, DatagramPort port, Duration timeout) {
        TransportConfig self = config.get().build();
        return StartupExchange.agree(group.rank(), group.worldSize(), self.jobId(), self.jobToken(), mode, secret,
                book, port, timeout);
    }
}
