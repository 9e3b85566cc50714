package io.xaforward.cluster.world;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;

/**
 * Everything a rank must know about the other ranks of its job to talk to them: the job id, every rank's address,
 * and each data center's gateway next hop. It comes from a cluster file ({@link ClusterFile}) or from the
 * registrations of all ranks at an etcd rendezvous; either way every rank builds the same world.
 *
 * <p>The network index identifier of rank {@code r} is {@code jobId << 16 | r}, the rule of the identifier plan,
 * so gateway routes can be written from the rank list alone.
 */
public record World(int jobId, List<RankAddress> ranks, Map<String, NextHop> gateways) {
    public World {
        if (jobId < 1 || jobId > 0xFFFF) throw new IllegalArgumentException("job id must be 1..65535, got " + jobId);
        ranks = List.copyOf(ranks);
        gateways = Map.copyOf(gateways);
        if (ranks.isEmpty()) throw new IllegalArgumentException("the world has no ranks");
        for (int r = 0; r < ranks.size(); r++) {
            if (ranks.get(r).rank() != r) {
                throw new IllegalArgumentException("ranks must be 0.." + (ranks.size() - 1) + " in order; position " + r
                        + " holds rank " + ranks.get(r).rank());
            }
        }
        TreeSet<String> dcs = new TreeSet<>();
        for (RankAddress a : ranks) dcs.add(a.datacenter());
        for (RankAddress a : ranks) {
            for (RankAddress b : ranks) {
                if (a.datacenter().equals(b.datacenter()) && a.form() != b.form()) {
                    throw new IllegalArgumentException("data center " + a.datacenter() + " has ranks of two forms ("
                            + a.form().configName() + ", " + b.form().configName() + ")");
                }
            }
        }
        if (dcs.size() > 1) {
            for (String dc : dcs) {
                if (!gateways.containsKey(dc)) {
                    throw new IllegalArgumentException("data center " + dc + " has no gateway next hop, but the job spans "
                            + String.join(", ", dcs));
                }
            }
        }
    }

    public int worldSize() { return ranks.size(); }

    public RankAddress rank(int r) {
        if (r < 0 || r >= ranks.size()) throw new IllegalArgumentException("no rank " + r + " (world size " + ranks.size() + ")");
        return ranks.get(r);
    }

    public int networkId(int rank) {
        rank(rank);
        return (jobId << 16) | rank;
    }

    /** Data center names in order of first appearance; a rank's index in this list is its collective group DC. */
    public List<String> datacenters() {
        List<String> dcs = new ArrayList<>();
        for (RankAddress a : ranks) if (!dcs.contains(a.datacenter())) dcs.add(a.datacenter());
        return dcs;
    }

    public int minMtu() {
        return ranks.stream().mapToInt(RankAddress::mtu).min().orElseThrow();
    }

    public NextHop gateway(String datacenter) {
        return Objects.requireNonNull(gateways.get(datacenter), () -> "no gateway next hop for data center " + datacenter);
    }
}
