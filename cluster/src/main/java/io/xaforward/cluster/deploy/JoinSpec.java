package io.xaforward.cluster.deploy;

import io.xaforward.cluster.CollectiveSettings;
import io.xaforward.cluster.Endpoint;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.transport.JobSecret;
import io.xaforward.transport.WireSecurity;

import java.time.Duration;
import java.util.Objects;

/**
 * How one rank on a real host joins its job, whatever it runs once joined ({@code xaf worker} trains,
 * {@code xaf agent} serves a PyTorch process): who it is, the job token, the wire security and its secret, how long
 * it waits, how many UDP flows it sends from, and how its collectives run. Everything here except the identity is
 * the same on every rank. {@link io.xaforward.cluster.RankRuntime#join} turns it into a running rank.
 *
 * @param identity     job, world size, rank (never {@link RankIdentity#ASSIGNED}: the rendezvous has assigned it
 *                     by now), interface and network form
 * @param token        the job token, carried in every datagram (no secret: it filters frames)
 * @param wireSecurity how every datagram is protected
 * @param secret       the job secret of the authenticated modes (null for crc32c)
 * @param opTimeout    how long one collective may wait for a peer before the job fails
 * @param startTimeout how long the start-up (the run agreement, the first collective) waits for every rank
 * @param flows        UDP flows this rank sends from (docs/TRANSPORT.md, "Flows per peer"); the gateways'
 *                     {@code src-port-span}
 * @param collective   algorithm, bucket bytes, wire format, pacing (and DiLoCo's outer format for a training rank)
 */
public record JoinSpec(RankIdentity identity, int token, WireSecurity wireSecurity, JobSecret secret,
                       Duration opTimeout, Duration startTimeout, int flows, CollectiveSettings collective) {
    public JoinSpec {
        Objects.requireNonNull(identity, "identity");
        Objects.requireNonNull(identity.iface(), "iface");
        Objects.requireNonNull(identity.form(), "form");
        Objects.requireNonNull(wireSecurity, "wireSecurity");
        Objects.requireNonNull(opTimeout, "opTimeout");
        Objects.requireNonNull(startTimeout, "startTimeout");
        Objects.requireNonNull(collective, "collective");
        if (wireSecurity.authenticated() && secret == null) {
            throw new IllegalArgumentException("--wire-security " + wireSecurity.configName() + " needs the job secret");
        }
        int job = identity.job(), world = identity.world(), rank = identity.rank();
        if (job < 1 || job > 0xFFFF) throw new IllegalArgumentException("--job must be 1..65535, was " + job);
        if (world < 1) throw new IllegalArgumentException("--world must be at least 1, was " + world);
        if (rank < 0 || rank >= world) {
            throw new IllegalArgumentException("--rank must be 0.." + (world - 1) + ", was " + rank);
        }
        if (opTimeout.isNegative() || opTimeout.isZero()) {
            throw new IllegalArgumentException("--op-timeout must be at least 1 second, was " + opTimeout.toSeconds());
        }
        if (startTimeout.isNegative() || startTimeout.isZero()) {
            throw new IllegalArgumentException("--start-timeout must be at least 1 second, was " + startTimeout.toSeconds());
        }
        Endpoint.checkFlows(Endpoint.UDP, flows);
    }

    public int jobId() { return identity.job(); }
    public int worldSize() { return identity.world(); }
    public int rank() { return identity.rank(); }
    public String iface() { return identity.iface(); }
    public NetworkForm form() { return identity.form(); }

    /** This spec with other collective settings (a training rank adds DiLoCo's outer format). */
    public JoinSpec withCollective(CollectiveSettings c) {
        return new JoinSpec(identity, token, wireSecurity, secret, opTimeout, startTimeout, flows, c);
    }
}
