package io.xaforward.cluster.deploy;

import io.xaforward.cluster.CollectiveSettings;
import io.xaforward.cluster.Endpoint;
import io.xaforward.cluster.SyncMode;
import io.xaforward.cluster.TrainJobSpec;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.training.Tokenizer;
import io.xaforward.training.TrainerConfig;
import io.xaforward.transport.JobSecret;
import io.xaforward.transport.WireSecurity;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * What {@code xaf worker} is told: who this rank is (job id, world size, token, rank, interface, form), the same
 * trainer and collective parts a {@link TrainJobSpec} of {@code xaf train} is made of, and what only a rank on a
 * real host needs (its secret, timeouts, data and tokenizer). The peers come from a cluster file or an etcd
 * rendezvous ({@link WorldSource}).
 *
 * @param trainer         preset, steps, batch, seed, learning rate, warm-up, threads, DiLoCo's outer loop (null
 *                        under ddp), and the checkpoints: this rank's directory (required) and their period (0 = only
 *                        the final one)
 * @param collective      algorithm, bucket bytes, wire format, outer format; the same on every rank
 * @param wireSecurity    how every datagram is protected; the same on every rank
 * @param secret          the job secret of the authenticated modes (null for crc32c); the same on every rank
 * @param flows           UDP flows this rank sends from (docs/TRANSPORT.md, "Flows per peer"); the same on every
 *                        rank, and the gateways' {@code src-port-span}
 * @param data            a prepared directory (train.bin, val.bin, meta.json), a .bin file of uint16 ids, or text
 * @param tokenizer       for text, and for .bin files without meta.json (a directory's meta.json names its own)
 * @param checksumEvery   print the weight checksum every N steps (0 = never)
 * @param resume          continue from the newest checkpoint that every rank has
 * @param opTimeout       how long one all-reduce may wait for a peer before the job fails
 * @param startTimeout    how long the first collective (the resume agreement) waits for every rank to be up
 */
public record WorkerOptions(int jobId, int worldSize, int token, int rank, String iface, NetworkForm form,
                            TrainerConfig trainer, CollectiveSettings collective, WireSecurity wireSecurity,
                            JobSecret secret, int flows, Path data, Tokenizer tokenizer, long checksumEvery,
                            boolean resume, Duration opTimeout, Duration startTimeout) {
    public WorkerOptions {
        Objects.requireNonNull(iface, "iface");
        Objects.requireNonNull(form, "form");
        Objects.requireNonNull(trainer, "trainer");
        Objects.requireNonNull(collective, "collective");
        Objects.requireNonNull(data, "data");
        Objects.requireNonNull(tokenizer, "tokenizer");
        Objects.requireNonNull(trainer.checkpointDir(), "checkpointDir");
        Objects.requireNonNull(wireSecurity, "wireSecurity");
        if (wireSecurity.authenticated() && secret == null) {
            throw new IllegalArgumentException("--wire-security " + wireSecurity.configName() + " needs the job secret");
        }
        if (jobId < 1 || jobId > 0xFFFF) throw new IllegalArgumentException("--job must be 1..65535, was " + jobId);
        if (worldSize < 1) throw new IllegalArgumentException("--world must be at least 1, was " + worldSize);
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("--rank must be 0.." + (worldSize - 1) + ", was " + rank);
        }
        if (trainer.steps() < 1) throw new IllegalArgumentException("--steps must be at least 1");
        Endpoint.checkFlows(Endpoint.UDP, flows);
        // The parameters, not the accessors: the fields are not assigned until this constructor ends.
        TrainJobSpec.checkSync(trainer.diloco() == null ? SyncMode.DDP : SyncMode.DILOCO, trainer.diloco(),
                collective.outerDtype(), trainer.preset());
    }

    /** Where this rank writes its checkpoints and its final weights. */
    public Path checkpointDir() {
        return trainer.checkpointDir();
    }

    /** ddp or diloco: diloco exactly when the trainer has DiLoCo's outer loop. */
    public SyncMode sync() {
        return trainer.diloco() == null ? SyncMode.DDP : SyncMode.DILOCO;
    }
}
