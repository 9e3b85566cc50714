package io.xaforward.cluster;

import io.xaforward.common.ConfigWord;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.transport.UdpDatagramPort;

import java.util.Locale;
import java.util.Objects;

/**
 * How a worker's transport reaches the network: {@link #AFXDP} sends and receives XAF frames through an AF_XDP
 * socket on the host's interface (the XAF XDP program steers the rank's frames into it; no socket layer per
 * packet), {@link #UDP} through a kernel UDP socket (AF_PACKET for the identifier-native form).
 *
 * <p>Both speak the same wire format, so every gateway mode but two carries either: an AF_XDP socket bypasses the
 * host's kernel stack, so it cannot use the kernel-tunnel mode's VXLAN device, and it writes one IP family, so it
 * cannot reach a peer's address in the other family ({@code direct} on a mixed-form topology; refused by
 * {@link #resolve} and {@code RankNetwork#addressBook}). The default is UDP: with four workers sharing one core
 * the AF_XDP endpoint made every step slower, not faster (docs/bench/train.md): on veth its sockets run in copy
 * mode (the kernel copies each frame into and out of the UMEM) and the outer IP/UDP checksums are computed in Java,
 * so it saves no CPU over the kernel's UDP path here. It is chosen explicitly ({@code --endpoint afxdp}).
 */
public enum Endpoint implements ConfigWord {
    AFXDP, UDP;

    /** Reads "afxdp" or "udp" ({@link ConfigWord#parse}). */
    public static Endpoint fromName(String name) {
        return ConfigWord.parse(Endpoint.class, "endpoint", name);
    }

    /**
     * The endpoint a job uses: {@code chosen} when given (null: the default for {@code gatewayMode}); an endpoint
     * that cannot cross the mode is an error.
     */
    public static Endpoint resolve(Endpoint chosen, GatewayMode gatewayMode) {
        Objects.requireNonNull(gatewayMode, "gatewayMode");
        if (chosen == null) return defaultFor(gatewayMode);
        if (chosen == AFXDP && gatewayMode == GatewayMode.KERNEL_TUNNEL) {
            throw new IllegalArgumentException("the afxdp endpoint cannot cross the kernel-tunnel mode: that tunnel is a"
                    + " VXLAN device in each host's kernel stack, which AF_XDP frames bypass; use --endpoint udp with"
                    + " kernel-tunnel");
        }
        return chosen;
    }

    /** {@link #resolve(Endpoint, GatewayMode)} of a command-line word: null or blank is the mode's default. */
    public static Endpoint resolve(String name, GatewayMode gatewayMode) {
        return resolve(name == null || name.isBlank() ? null : fromName(name), gatewayMode);
    }

    /**
     * Fails unless {@code flows} (UDP flows per worker, {@code --flows}) is 1 to {@link UdpDatagramPort#MAX_FLOWS} and,
     * above 1, the endpoint is UDP: an AF_XDP socket sends from one address. Hosts of the identifier-native form have
     * no ports and send one flow whatever the setting.
     */
    public static void checkFlows(Endpoint endpoint, int flows) {
        if (flows < 1 || flows > UdpDatagramPort.MAX_FLOWS) {
            throw new IllegalArgumentException("--flows must be 1 to " + UdpDatagramPort.MAX_FLOWS + ", was " + flows);
        }
        if (flows > 1 && endpoint == AFXDP) {
            throw new IllegalArgumentException("--flows " + flows + " needs the udp endpoint: an AF_XDP socket sends from"
                    + " one address");
        }
    }

    /** UDP for every mode: on shared cores the AF_XDP endpoint makes steps slower, not faster (see the class comment). */
    public static Endpoint defaultFor(GatewayMode gatewayMode) {
        return UDP;
    }

    @Override
    public String configName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
