package io.xaforward.cluster;

import io.xaforward.common.ConfigWord;
import io.xaforward.training.DilocoConfig;

import java.util.Locale;
import java.util.Map;

/**
 * How the ranks of a training job keep their models together (docs/TRAINING.md, "DiLoCo").
 */
public enum SyncMode implements ConfigWord {
    /** Every step, the gradient is all-reduced over all ranks (through the gateways). */
    DDP,
    /**
     * Every step, the gradient is all-reduced among the ranks of each data center only; every H steps the
     * pseudo-gradients of the data centers are averaged through the gateways and applied by an outer Nesterov SGD.
     */
    DILOCO;

    /**
     * The mode of a trainer with the outer loop {@code diloco}: diloco exactly when it has one. The one place a job's
     * mode is derived; the trainer's {@link io.xaforward.training.TrainerConfig#diloco()} is its one source.
     */
    public static SyncMode of(DilocoConfig diloco) {
        return diloco == null ? DDP : DILOCO;
    }

    /** Reads ddp or diloco (local-sgd for diloco too; {@link ConfigWord#parse}). */
    public static SyncMode fromName(String name) {
        return ConfigWord.parse(SyncMode.class, "sync mode", name, Map.of("local-sgd", DILOCO));
    }

    @Override
    public String configName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
