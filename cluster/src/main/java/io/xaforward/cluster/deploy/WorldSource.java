package io.xaforward.cluster.deploy;

import io.xaforward.cluster.world.ClusterFile;
import io.xaforward.cluster.world.RankAddress;
import io.xaforward.cluster.world.World;

import java.nio.file.Path;

/**
 * Where a worker learns its peers: a cluster file, or an etcd rendezvous. {@link #join} returns only once the
 * whole world is known; {@link #close} releases whatever the worker holds there (its lease).
 */
public interface WorldSource extends AutoCloseable {
    World join(JoinSpec rank) throws Exception;

    @Override
    default void close() {}

    /** The world of a cluster file, checked against what the worker was told. */
    static WorldSource clusterFile(Path file) {
        return options -> {
            World w = ClusterFile.read(file);
            checkAgainst(w, options, file.toString());
            return w;
        };
    }

    /** Fails when the world disagrees with the worker's own options (job, world size, its form). */
    static void checkAgainst(World w, JoinSpec o, String source) {
        if (w.jobId() != o.jobId()) {
            throw new IllegalArgumentException(source + " describes job " + w.jobId() + ", this worker runs job " + o.jobId());
        }
        if (w.worldSize() != o.worldSize()) {
            throw new IllegalArgumentException(source + " lists " + w.worldSize() + " ranks, the job's world size is " + o.worldSize());
        }
        RankAddress self = w.rank(o.rank());
        if (self.form() != o.form()) {
            throw new IllegalArgumentException(source + " puts rank " + o.rank() + " on a " + self.form().configName()
                    + " network, this worker was started with --form " + o.form().configName());
        }
    }
}
