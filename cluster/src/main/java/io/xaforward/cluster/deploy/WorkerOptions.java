package io.xaforward.cluster.deploy;

import io.xaforward.collective.Algorithm;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.training.Tokenizer;
import io.xaforward.transport.JobSecret;
import io.xaforward.transport.WireSecurity;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * What {@code xaf worker} is told: the job (id, world size, token), who this rank is (rank, interface, form), and
 * how to train. The peers come from a cluster file or an etcd rendezvous ({@link WorldSource}).
 *
 * @param data            a prepared directory (train.bin, val.bin, meta.json), a .bin file of uint16 ids, or text
 * @param tokenizer       for text, and for .bin files without meta.json (a directory's meta.json names its own)
 * @param checkpointDir   where this rank writes {@code ckpt-rankR-stepNNNNNN.bin} and its final weights
 * @param checkpointEvery write a checkpoint every N steps (0 = only the final one)
 * @param resume          continue from the newest checkpoint that every rank has
 * @param opTimeout       how long one all-reduce may wait for a peer before the job fails
 * @param startTimeout    how long the first collective (the resume agreement) waits for every rank to be up
 * @param wireSecurity    how every datagram is protected; the same on every rank
 * @param secret          the job secret of the authenticated modes (null for crc32c); the same on every rank
 * @param flows           UDP flows this rank sends from (docs/TRANSPORT.md, "Flows per peer"); the same on every
 *                        rank, and the gateways' {@code src-port-span}
 * @param sync            ddp or diloco, the same on every rank
 * @param diloco          the outer loop of diloco (null under ddp)
 * @param outerDtype      number format of diloco's outer all-reduce
 */
public record WorkerOptions(int jobId, int worldSize, int token, int rank, String iface, NetworkForm form,
                            String preset, long steps, int globalBatch, long seed, double learningRate,
                            long warmupSteps, Path data, Tokenizer tokenizer, int threads, long bucketBytes, Algorithm algorithm,
                            Path checkpointDir, long checkpointEvery, boolean resume, long checksumEvery,
                            Duration opTimeout, Duration startTimeout, WireSecurity wireSecurity,
                            JobSecret secret, int flows, io.xaforward.cluster.SyncMode sync,
                            io.xaforward.training.DilocoConfig diloco, io.xaforward.collective.OuterDtype outerDtype) {
    public WorkerOptions {
        Objects.requireNonNull(iface, "iface");
        Objects.requireNonNull(form, "form");
        Objects.requireNonNull(data, "data");
        Objects.requireNonNull(tokenizer, "tokenizer");
        Objects.requireNonNull(checkpointDir, "checkpointDir");
        Objects.requireNonNull(wireSecurity, "wireSecurity");
        if (wireSecurity.authenticated() && secret == null) {
            throw new IllegalArgumentException("--wire-security " + wireSecurity.configName() + " needs the job secret");
        }
        if (jobId < 1 || jobId > 0xFFFF) throw new IllegalArgumentException("--job must be 1..65535, was " + jobId);
        if (worldSize < 1) throw new IllegalArgumentException("--world must be at least 1, was " + worldSize);
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("--rank must be 0.." + (worldSize - 1) + ", was " + rank);
        }
        if (checkpointEvery < 0) throw new IllegalArgumentException("--checkpoint-every must not be negative");
        if (steps < 1) throw new IllegalArgumentException("--steps must be at least 1");
        io.xaforward.cluster.Endpoint.checkFlows(io.xaforward.cluster.Endpoint.UDP, flows);
        Objects.requireNonNull(sync, "sync");
        Objects.requireNonNull(outerDtype, "outerDtype");
        io.xaforward.cluster.TrainJobSpec.checkSync(sync, diloco, outerDtype, preset);
    }
}
