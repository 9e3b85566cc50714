package io.xaforward.gateway;

import io.xaforward.dataplane.DispatcherAttachment;
import io.xaforward.dataplane.GatewayPins;
import io.xaforward.dataplane.Route;
import io.xaforward.dataplane.SharedLayouts;
import io.xaforward.dataplane.XafDataplane;
import io.xaforward.dataplane.XdpAttachment;
import io.xaforward.dataplane.XdpDispatcher;
import io.xaforward.dataplane.sys.Syscalls;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The XDP side of a gateway's life. {@link #start} loads the program (or adopts the maps a previous gateway of the
 * same name pinned), programs the ports and the first routes, then attaches to every configured interface: directly,
 * through libxdp's dispatcher, or, for a pinned predecessor, by switching its links to the new program atomically
 * (the hitless restart: every frame meets the old or the new program). {@link #stop} detaches, or leaves a pinned
 * gateway attached and forwarding for its successor.
 *
 * <p>Start-up checks what it can before touching the kernel (interfaces, MAC addresses), and a failed start takes
 * back what it attached, so a bad config leaves nothing attached.
 */
final class GatewayLifecycle {
    // The gateway's log lines keep the name operators know them by, whichever class writes them.
    private static final Logger LOG = LoggerFactory.getLogger(GatewayService.class);

    private final XafDataplane dataplane;
    private final GatewayPins pins;
    private final Map<String, Integer> ifindexes;
    private final Map<String, byte[]> macs;
    /** The route map's writer, which keeps the gateway's view of the routes it installed (read once at start). */
    private final RouteReconciler reconciler;

    private GatewayLifecycle(XafDataplane dataplane, GatewayPins pins, Map<String, Integer> ifindexes,
                             Map<String, byte[]> macs, RouteReconciler reconciler) {
        this.dataplane = dataplane;
        this.pins = pins;
        this.ifindexes = ifindexes;
        this.macs = macs;
        this.reconciler = reconciler;
    }

    /**
     * Attaches the gateway of {@code config}. With a {@code pinName} the XDP links and maps are pinned under
     * {@link GatewayPins#forGateway}, and what a previous gateway of that name pinned is adopted: its maps (routes,
     * counters) are reused and its links switched to the new program. {@code routesFromRegistry}: the routes come from
     * a route registry, not from the file, so an adopted route map is left as it is (it keeps forwarding) until the
     * registry's routes are applied. In dispatcher mode the maps are pinned (libxdp pins the program's place in each
     * dispatcher itself) and a restart's program joins each dispatcher before the one it replaces leaves
     * ({@link DispatcherAttachment}), so no frame is lost.
     *
     * @throws IllegalStateException when a pinned predecessor was attached in the other attach mode
     */
    static GatewayLifecycle start(GatewayConfig config, String pinName, boolean routesFromRegistry) {
        Map<String, Integer> ifindexes = new HashMap<>();
        Map<String, byte[]> macs = new HashMap<>();
        for (GatewayConfig.PortConfig p : config.ports()) {
            ifindexes.put(p.iface(), resolveIfindex(p.iface()));
            macs.put(p.iface(), readMac(p.iface()));
        }
        GatewayPins pins = pinName == null ? null : GatewayPins.forGateway(pinName);
        boolean dispatcher = config.attach() == GatewayConfig.AttachMode.DISPATCHER;
        boolean adopting = pins != null && pins.hasMaps();
        if (adopting && pins.pinnedThroughDispatcher() != dispatcher) {
            throw new IllegalStateException("the gateway pinned at " + pins.dir() + " was attached "
                    + (dispatcher ? "with XDP links of its own" : "through libxdp's dispatcher") + ", and this one would attach "
                    + (dispatcher ? "through the dispatcher" : "with links of its own") + ": a restart keeps the attach mode;"
                    + " to change it, 'xaf gateway unpin' the old one first (forwarding stops until the new gateway attaches)");
        }
        XafDataplane dp = loadDataplane(pins, dispatcher);
        List<XdpAttachment> created = new ArrayList<>();
        RouteReconciler reconciler;
        try {
            if (pins != null && !adopting) {
                pins.pinMaps(dp);
                if (dispatcher) pins.markDispatcher();
            }
            programPorts(dp, config, ifindexes);
            // Against the map's real contents: a fresh map is empty, an adopted one keeps the routes that forward now.
            Map<Integer, Route> wanted = GatewayService.routesOf(config, macs);
            reconciler = RouteReconciler.readFrom(RouteTable.of(dp));
            RouteReconciler.Result routes = adopting && routesFromRegistry ? new RouteReconciler.Result(0, 0, 0)
                    : reconciler.apply(wanted);
            if (adopting) {
                LOG.info("adopted the pinned maps in {}: {} routes added, {} changed, {} removed", pins.dir(),
                        routes.added(), routes.changed(), routes.removed());
            }
            for (GatewayConfig.PortConfig p : config.ports()) {
                XdpAttachment a;
                String how;
                if (pins != null && pins.hasLink(p.iface())) {
                    a = XdpAttachment.adopt(p.iface(), pins.linkPath(p.iface()).toString());
                    dp.adopt(a);
                    a.replaceProgram(dp.programFd()); // atomic: every frame meets the old or the new program
                    how = "adopted pinned ";
                } else if (dispatcher) {
                    // A pinned gateway's earlier program, left in the dispatcher, leaves it only once this one runs there
                    DispatcherAttachment d = dp.attachThroughDispatcher(p.iface());
                    LOG.info(String.format("attached to %s (ifindex %d, %s, native mode, through libxdp's dispatcher as"
                                    + " program id %d%s; the dispatcher runs %s)", p.iface(), d.ifindex(), p.form().configName(),
                            d.programId(), d.predecessors().isEmpty() ? "" : ", taking over from pinned program id "
                                    + d.predecessors().stream().map(String::valueOf).collect(Collectors.joining(", ")),
                            XdpDispatcher.components(d.ifindex()).stream()
                                    .map(c -> c.name() + " (id " + c.id() + ", priority " + c.priority() + ")").toList()));
                    continue;
                } else {
                    a = dp.attach(p.iface(), config.attach() == GatewayConfig.AttachMode.NATIVE_OR_GENERIC);
                    created.add(a);
                    if (pins != null) a.pin(pins.linkPath(p.iface()).toString());
                    how = pins != null ? "pinned " : "";
                }
                LOG.info(String.format("attached to %s (ifindex %d, %s, %s mode, %sXDP link %d)", p.iface(), a.ifindex(),
                        p.form().configName(), a.mode().label(), how, a.linkId()));
            }
        } catch (RuntimeException e) {
            if (pins != null) {
                // Leave what was pinned before this start forwarding; take back only what this start attached.
                for (XdpAttachment a : created) {
                    try {
                        Files.deleteIfExists(pins.linkPath(a.ifname()));
                    } catch (IOException io) {
                        e.addSuppressed(io);
                    }
                    a.detach();
                }
                if (!adopting) pins.remove();
                dp.releaseAll();
            }
            dp.close(); // detaches whatever was attached (and not pinned) before the failure
            throw e;
        }
        return new GatewayLifecycle(dp, pins, ifindexes, macs, reconciler);
    }

    /**
     * The program and its maps, adopting the pinned maps when a gateway of this name is pinned. For the dispatcher the
     * maps alone: its program is loaded when it attaches.
     */
    private static XafDataplane loadDataplane(GatewayPins pins, boolean dispatcher) {
        if (pins == null || !pins.hasMaps()) return dispatcher ? XafDataplane.loadForDispatcher() : XafDataplane.load();
        Map<String, Integer> fds = pins.openMaps();
        try {
            return dispatcher ? XafDataplane.loadForDispatcher(fds) : XafDataplane.loadReusing(fds);
        } catch (RuntimeException e) {
            throw new IllegalStateException("cannot adopt the gateway pinned at " + pins.dir() + " (" + e.getMessage()
                    + "); 'xaf gateway unpin' removes it (forwarding stops until the new gateway attaches)", e);
        } finally {
            GatewayPins.closeAll(fds);
        }
    }

    /**
     * Makes the ports, tx_ports and port_mtus maps hold exactly the configured ports with the MTUs their interfaces
     * have now (writing only what differs); {@code ifindexes}: each port's, resolved at start.
     */
    private static void programPorts(XafDataplane dp, GatewayConfig config, Map<String, Integer> ifindexes) {
        Map<Integer, XafDataplane.PortEntry> current = dp.ports();
        Set<Integer> slots = new HashSet<>();
        for (GatewayConfig.PortConfig p : config.ports()) {
            int ifindex = ifindexes.get(p.iface());
            XafDataplane.PortEntry want = new XafDataplane.PortEntry(p.slot(), p.form().code(), config.maxHopLimit());
            if (!want.equals(current.remove(ifindex))) dp.setPort(ifindex, p.slot(), p.form().code(), config.maxHopLimit());
            int mtu = Syscalls.mtu(p.iface());
            if (dp.txPort(p.slot()) != ifindex) dp.setTxPort(p.slot(), ifindex, mtu);
            else if (dp.portMtu(p.slot()) != mtu) dp.setPortMtu(p.slot(), mtu);
            slots.add(p.slot());
        }
        for (int stale : current.keySet()) dp.deletePort(stale);
        for (int slot = 0; slot < SharedLayouts.MAX_PORTS; slot++) {
            if (!slots.contains(slot) && dp.txPort(slot) != 0) dp.deleteTxPort(slot);
        }
    }

    private static int resolveIfindex(String iface) {
        try {
            return Syscalls.ifNameToIndex(iface);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("interface '" + iface + "' does not exist in this network namespace"
                    + " (run the gateway in the namespace that has it, e.g. ip netns exec NS xaf gateway ...)");
        }
    }

    private static byte[] readMac(String iface) {
        // ioctl in this process's network namespace: right under 'ip netns exec' and 'nsenter --net' alike.
        try {
            return Syscalls.hardwareAddress(iface);
        } catch (RuntimeException e) {
            throw new IllegalStateException("cannot read the MAC address of '" + iface + "': " + e.getMessage(), e);
        }
    }

    /** The loaded program and its maps. */
    XafDataplane dataplane() { return dataplane; }

    /** Where this gateway is pinned, or null when it is not. */
    GatewayPins pins() { return pins; }

    /** The route map's writer (every later route change goes through it). */
    RouteReconciler reconciler() { return reconciler; }

    /** Each port's own MAC address, read at start (a route's source MAC unless it names one). */
    Map<String, byte[]> macs() { return macs; }

    /** The ifindex of a port, as resolved at start-up. */
    int ifindex(String iface) { return ifindexes.get(iface); }

    /**
     * Detaches from every interface, or, for a pinned gateway, leaves the program attached and forwarding with its
     * routes until a gateway of the same name adopts it.
     */
    void stop() {
        if (pins != null && pins.hasMaps()) {
            dataplane.releaseAll(); // the pins keep the program attached, on purpose
            dataplane.close();
            LOG.info("left {} attached and pinned at {}: it keeps forwarding with its routes until a gateway with"
                    + " the same name adopts it, or 'xaf gateway unpin' detaches it", String.join(", ", ifindexes.keySet()), pins.dir());
        } else {
            dataplane.close();
            LOG.info("detached from {}", String.join(", ", ifindexes.keySet()));
        }
    }
}
