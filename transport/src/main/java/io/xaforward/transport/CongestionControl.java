package io.xaforward.transport;

import io.xaforward.common.ConfigWord;

import java.util.Map;

/** How the transport decides how fast to send to each peer (docs/TRANSPORT.md, "Congestion control"). */
public enum CongestionControl implements ConfigWord {
    /**
     * Rate-based, after BBR ({@link RateController}): paces at the measured bottleneck bandwidth and keeps about two
     * bandwidth-delay products in flight; random loss is resent, not taken for congestion. For paths between data
     * centers, long and lossy.
     */
    RATE("rate"),
    /** Loss-based window (Reno with SACK): slow start, additive increase, halved once per loss episode. */
    WINDOW("window");

    private final String configName;

    CongestionControl(String configName) {
        this.configName = configName;
    }

    @Override
    public String configName() {
        return configName;
    }

    /** Reads a command-line name: rate (or bbr) or window (or reno). */
    public static CongestionControl fromName(String name) {
        return ConfigWord.parse(CongestionControl.class, "congestion control", name,
                Map.of("bbr", RATE, "reno", WINDOW));
    }
}
