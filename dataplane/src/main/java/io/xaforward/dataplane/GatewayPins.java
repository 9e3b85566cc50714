package io.xaforward.dataplane;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Where a gateway started with pinning keeps its XDP links and maps on the bpffs: {@code xaforward/NAME/} with one
 * file per map ({@code routes}, {@code ports}, ...) and one per attached interface ({@code link_IFNAME}). While the
 * pins exist the program stays attached and keeps forwarding with the routes in its maps, whether or not a gateway
 * process runs; a new gateway with the same name adopts them, and removing the directory detaches everything.
 *
 * <p>The bpffs is the one at /sys/fs/bpf. {@code ip netns exec} mounts a fresh /sys for the namespace, which hides
 * it (and a bpffs mounted inside that private mount namespace would vanish with the process): a pinned gateway runs
 * under {@code nsenter --net=/run/netns/NS}, which enters only the network namespace.
 */
public final class GatewayPins {
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
    private static final String LINK_PREFIX = "link_";
    /**
     * An empty directory (a bpffs holds no plain files) that says the gateway pinned here runs through libxdp's
     * dispatcher: it has no link pins, since libxdp pins each program's place in the dispatcher itself.
     */
    private static final String DISPATCHER_MARK = "attach_dispatcher";

    private final Path dir;

    private GatewayPins(Path dir) {
        this.dir = dir;
    }

    /** The pin directory of the gateway called {@code name} (letters, digits, '.', '_' and '-'). */
    public static GatewayPins forGateway(String name) {
        if (!NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("gateway name '" + name + "': use 1-64 letters, digits, '.', '_' or '-'");
        }
        return new GatewayPins(bpffs().resolve("xaforward").resolve(name));
    }

    /** A pin directory at an explicit place on a bpffs (tests). */
    public static GatewayPins at(Path dir) {
        return new GatewayPins(dir);
    }

    /** The mounted bpffs at /sys/fs/bpf, as this process sees it. */
    static Path bpffs() {
        if (isBpffs(Path.of("/proc/self/mountinfo"), "/sys/fs/bpf")) return Path.of("/sys/fs/bpf");
        throw new IllegalStateException("no BPF filesystem at /sys/fs/bpf here, where pins live: 'ip netns exec' mounts"
                + " a fresh /sys that hides it, so run a pinned gateway with 'nsenter --net=/run/netns/NS xaf gateway ...';"
                + " on a host without it, mount it first: 'mount -t bpf bpf /sys/fs/bpf'");
    }

    private static boolean isBpffs(Path mountinfo, String mountPoint) {
        try {
            for (String line : Files.readAllLines(mountinfo)) {
                String[] f = line.split(" ");
                int dash = line.indexOf(" - ");
                if (f.length > 4 && f[4].equals(mountPoint) && dash > 0 && line.substring(dash + 3).startsWith("bpf ")) return true;
            }
            return false;
        } catch (IOException e) {
            return false;
        }
    }

    public Path dir() { return dir; }

    /** True when maps are pinned here (a pinned gateway exists, running or not). */
    public boolean hasMaps() {
        return Files.exists(dir.resolve(XafDataplane.MAP_NAMES.getFirst()));
    }

    public Path linkPath(String ifname) {
        return dir.resolve(LINK_PREFIX + ifname);
    }

    public boolean hasLink(String ifname) {
        return Files.exists(linkPath(ifname));
    }

    /** True when the gateway pinned here was attached through libxdp's dispatcher ({@link #markDispatcher}). */
    public boolean pinnedThroughDispatcher() {
        return Files.isDirectory(dir.resolve(DISPATCHER_MARK));
    }

    /** Records that the gateway pinned here is attached through libxdp's dispatcher. */
    public void markDispatcher() {
        try {
            Files.createDirectories(dir.resolve(DISPATCHER_MARK));
        } catch (IOException e) {
            throw new UncheckedIOException("marking " + dir + " as pinned through libxdp's dispatcher", e);
        }
    }

    /** Interfaces with a pinned link here. */
    public List<String> linkedInterfaces() {
        if (!Files.isDirectory(dir)) return List.of();
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(LINK_PREFIX))
                    .map(n -> n.substring(LINK_PREFIX.length())).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Every XDP link pinned by a gateway on this host's BPF filesystem: link id -> "NAME" (the gateway's name);
     * empty when /sys/fs/bpf is not visible here (under ip netns exec) or nothing is pinned.
     */
    public static Map<Integer, String> pinnedLinkIds() {
        Map<Integer, String> out = new LinkedHashMap<>();
        Path root;
        try {
            root = bpffs().resolve("xaforward");
        } catch (IllegalStateException e) {
            return out;
        }
        if (!Files.isDirectory(root)) return out;
        try (Stream<Path> gateways = Files.list(root); Arena arena = Arena.ofConfined()) {
            for (Path g : gateways.sorted().toList()) {
                GatewayPins pins = new GatewayPins(g);
                for (String iface : pins.linkedInterfaces()) {
                    int fd = LibBpf.objGet(arena.allocateFrom(pins.linkPath(iface).toString()));
                    if (fd < 0) continue; // removed meanwhile
                    try {
                        out.put(KernelObjects.link(fd).id(), g.getFileName().toString());
                    } finally {
                        LibBpf.closeFd(fd);
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }

    /** New fds for the pinned maps, by name; the caller closes them ({@link #closeAll}). */
    public Map<String, Integer> openMaps() {
        Map<String, Integer> fds = new LinkedHashMap<>();
        try (Arena arena = Arena.ofConfined()) {
            for (String name : XafDataplane.MAP_NAMES) {
                Path p = dir.resolve(name);
                int fd = LibBpf.objGet(arena.allocateFrom(p.toString()));
                if (fd < 0) {
                    closeAll(fds);
                    throw new BpfException("bpf_obj_get('" + p + "')", fd);
                }
                fds.put(name, fd);
            }
        }
        return fds;
    }

    public static void closeAll(Map<String, Integer> fds) {
        fds.values().forEach(LibBpf::closeFd);
    }

    /** Pins every map of {@code dp} here (creating the directory). */
    public void pinMaps(XafDataplane dp) {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("creating the pin directory " + dir, e);
        }
        try (Arena arena = Arena.ofConfined()) {
            for (String name : XafDataplane.MAP_NAMES) {
                Path p = dir.resolve(name);
                int rc = LibBpf.objPin(dp.map(name).fd(), arena.allocateFrom(p.toString()));
                if (rc != 0) throw new BpfException("bpf_obj_pin(map '" + name + "', '" + p + "')", rc);
            }
        }
    }

    /**
     * Removes every pin and the directory: links that no process holds are detached at once, maps and programs
     * that nothing uses any more are freed. A gateway pinned through libxdp's dispatcher is first removed from the
     * dispatcher of every interface of this network namespace that runs it. Returns the names removed (empty when
     * nothing was pinned).
     */
    public List<String> remove() {
        List<String> removed = new ArrayList<>();
        if (!Files.isDirectory(dir)) return removed;
        if (pinnedThroughDispatcher() && hasMaps()) {
            // libxdp's own pins keep the program in each dispatcher, and the program keeps the maps: removing only
            // our pins would leave it forwarding with no way to reach it. It is found by the routes map it uses.
            Map<String, Integer> fds = openMaps();
            try {
                for (String where : DispatcherAttachment.detachUsersOf(KernelObjects.map(fds.get("routes")).id())) {
                    removed.add("dispatcher program on " + where);
                }
            } finally {
                closeAll(fds);
            }
        }
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : s.sorted().toList()) {
                Files.delete(p);
                removed.add(p.getFileName().toString());
            }
            Files.delete(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("removing the pins in " + dir, e);
        }
        return removed;
    }

    @Override
    public String toString() { return dir.toString(); }
}
