package io.xaforward.cluster;

import io.xaforward.collective.CollectiveGroup;
import io.xaforward.transport.AddressBook;
import io.xaforward.transport.TransportConfig;

import java.time.Duration;

/**
 * What a rank is wired to, wherever it runs: its place in the collective group, its peers' addresses and the chunk
 * size its paths allow. {@link RankNetwork} derives it from a testbed topology, {@link io.xaforward.cluster.world.WorldNetwork}
 * from a world of real hosts; {@link RankRuntime} builds a rank's transport and collectives from either.
 */
public interface RankWiring {
    int rank();

    int worldSize();

    int jobId();

    /** The collective group: the data center of every rank. */
    CollectiveGroup group();

    /** Where this rank sends to reach each rank (itself included). */
    AddressBook addressBook();

    /** Chunk payload bytes of the job: what the smallest MTU on its paths leaves ({@link TransportConfig#jobChunkPayload}). */
    int maxPayload();

    /**
     * The transport settings every rank of a job starts from ({@link TransportConfig#forJob}), sized by
     * {@link #maxPayload()}. {@code token} is normally the job's; another makes this rank an impostor that gateways and
     * peers drop.
     */
    default TransportConfig.Builder transportConfig(int token, Duration ackTimeout) {
        return TransportConfig.forJob(rank(), jobId(), token, maxPayload(), ackTimeout);
    }
}
