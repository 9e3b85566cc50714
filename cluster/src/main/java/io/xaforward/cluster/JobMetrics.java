package io.xaforward.cluster;

import io.xaforward.training.MetricsLog;
import io.xaforward.training.ModelConfig;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

/**
 * The per-step metrics of a distributed job as JSON lines (metrics.jsonl in the work directory): the combined
 * figures of all ranks plus what the network saw, cumulative since the job started: payload bytes the ranks' transports
 * sent, their retransmissions, and the frames the gateways dropped.
 */
final class JobMetrics implements AutoCloseable {
    static final String FILE = "metrics.jsonl";

    private final MetricsLog log;
    private final ClusterRun cluster;
    /** Tokens one step consumes on all ranks together: the global batch of full-context sequences. */
    private final long tokensPerStep;

    JobMetrics(TrainJobSpec spec, ClusterRun cluster) throws IOException {
        this.log = new MetricsLog(file(spec), false);
        this.cluster = cluster;
        this.tokensPerStep = (long) spec.trainer().globalBatch() * ModelConfig.preset(spec.trainer().preset()).contextLength();
    }

    static Path file(TrainJobSpec spec) {
        return spec.workDir().resolve(FILE);
    }

    void write(TrainResult.Step step, Map<Integer, WorkerLine> ranks) throws IOException {
        WorkerLine any = ranks.values().iterator().next();
        Map<String, Object> r = MetricsLog.record(step.step(), step.step() * tokensPerStep, step.loss(), step.validationLoss(),
                number(any, "lr"), step.tokensPerSecond(), step.computeMs(), step.commMs());
        r.put("val_loss_se", step.validation() == null ? null : step.validation().standardError());
        r.put("val_windows", step.validation() == null ? null : step.validation().windows());
        r.put("step_ms", step.stepMs());
        r.put("wire_bytes", ranks.values().stream().mapToLong(l -> (long) number(l, "sent_bytes")).sum());
        r.put("retransmits", ranks.values().stream().mapToLong(l -> (long) number(l, "retransmits")).sum());
        if (any.values().containsKey("local_loss")) { // diloco: what the outer loop did after this step
            r.put("outer_applied", any.values().containsKey("outer_applied") ? any.integer("outer_applied") : 0);
            r.put("outer_bytes", any.values().containsKey("outer_bytes") ? any.integer("outer_bytes") : 0);
        }
        r.put("gateway_drops", cluster.gatewayCounters().entrySet().stream()
                .filter(e -> e.getKey().contains("drop")).mapToLong(Map.Entry::getValue).sum());
        log.write(r);
    }

    private static double number(WorkerLine line, String key) {
        return line.values().containsKey(key) ? line.number(key) : Double.NaN;
    }

    @Override
    public void close() throws IOException {
        log.close();
    }
}
