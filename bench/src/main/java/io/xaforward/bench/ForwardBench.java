package io.xaforward.bench;

import io.xaforward.dataplane.ProgramRunStats;
import io.xaforward.common.ConfigWord;
import io.xaforward.protocol.EthernetHeader;
import io.xaforward.protocol.FrameWriter;
import io.xaforward.protocol.MessageType;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.OuterAddressing;
import io.xaforward.protocol.PayloadIntegrity;
import io.xaforward.protocol.XafHeader;
import io.xaforward.testbed.CpuBudget;
import io.xaforward.testbed.Netns;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.Testbed;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.Topology;
import io.xaforward.testbed.mode.GatewayMode;
import io.xaforward.testbed.mode.GatewayRunner;
import io.xaforward.testbed.plan.IdentifierPlan;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code xaf bench forward}: delivered rate, loss, gateway CPU per packet and RTT of every gateway mode on the same
 * testbed (bench/forward-topology.yaml), with a bare devmap redirect ({@link RedirectReference}, what
 * {@code xdp-bench redirect-map} does; that tool does not load on this kernel) on the same links as the reference. Modes are interleaved (all modes of run 1, then all of run 2, ...) so slow drifts of a shared machine
 * hit every mode alike; each figure is reported as the median of the runs with min and max.
 */
public final class ForwardBench {
    /**
     * What to run. {@code lowRatePps} &gt; 0 paces the socket senders (the quick correctness check).
     * {@code warmupMs}: traffic through each flow before its measured samples (not recorded), so that a gateway
     * process is measured warmed up (a JVM relay compiles its per-form code in its first second of traffic).
     */
    public record Options(boolean quick, int runs, List<Integer> sizes, List<Mode> modes, long durationMs, long lowRatePps,
                          long warmupMs, double gatewayCpuShare, List<String> flows) {
        /** Default warm-up of the full bench: at 40-70 kpps the relay's JIT has compiled its hot path well before. */
        public static final long DEFAULT_WARMUP_MS = 1500;

        /**
         * {@code gatewayCpuShare} &lt; 1: the gateway's CPU is budgeted ({@link CpuBudget}) for every mode while it
         * runs; {@code flows}: flow names to run (empty: every flow each mode can carry).
         */
        public Options {
            if (!(gatewayCpuShare > 0 && gatewayCpuShare <= 1)) throw new IllegalArgumentException("gateway CPU share must be in (0, 1]");
            flows = List.copyOf(flows);
            for (String name : flows) {
                if (FLOWS.stream().noneMatch(f -> f.name().equals(name))) {
                    throw new IllegalArgumentException("unknown flow " + name + ", expected some of " + FLOWS.stream().map(Flow::name).toList());
                }
            }
        }

        public Options(boolean quick, int runs, List<Integer> sizes, List<Mode> modes, long durationMs, long lowRatePps,
                       long warmupMs) {
            this(quick, runs, sizes, modes, durationMs, lowRatePps, warmupMs, 1.0, List.of());
        }

        /** The same bench with the gateway's CPU budgeted to {@code share}. */
        public Options withGatewayCpu(double share) {
            return new Options(quick, runs, sizes, modes, durationMs, lowRatePps, warmupMs, share, flows);
        }

        /** The same bench on the named flows only. */
        public Options withFlows(List<String> names) {
            return new Options(quick, runs, sizes, modes, durationMs, lowRatePps, warmupMs, gatewayCpuShare, names);
        }

        public Options(boolean quick, int runs, List<Integer> sizes, List<Mode> modes, long durationMs, long lowRatePps) {
            this(quick, runs, sizes, modes, durationMs, lowRatePps, quick ? durationMs : DEFAULT_WARMUP_MS);
        }

        public static Options full(List<Integer> sizes, List<Mode> modes, int runs) {
            return new Options(false, runs, sizes, modes, 1000, 0);
        }

        public static Options quick(List<Mode> modes) {
            // 5 kpps: well below what the relay sustains on its one pinned CPU while its JIT is still compiling.
            return new Options(true, 1, List.of(64, 0), modes, 400, 5_000);
        }
    }

    /** A bench mode: a gateway mode, or the xdp-bench reference. */
    public enum Mode implements ConfigWord {
        REFERENCE(null), XDP(GatewayMode.XDP), KERNEL(GatewayMode.KERNEL), RELAY(GatewayMode.RELAY), AFXDP(GatewayMode.AFXDP);

        private final GatewayMode gateway;

        Mode(GatewayMode gateway) {
            this.gateway = gateway;
        }

        /** The gateway mode this bench mode measures; null for the reference. */
        public GatewayMode gateway() {
            return gateway;
        }

        /** The word for this mode on the command line: reference, or the gateway mode's. */
        @Override
        public String configName() {
            return gateway == null ? "reference" : gateway.configName();
        }

        /**
         * Reads a {@link #configName()} (reference also as xdp-bench or ref; {@link ConfigWord#parse}); a gateway
         * mode that the bench does not measure is an error that says so.
         */
        public static Mode fromName(String s) {
            Map<String, Mode> aliases = Map.of("xdp-bench", REFERENCE, "ref", REFERENCE);
            GatewayMode unmeasured = ConfigWord.find(Mode.class, s, aliases) == null
                    ? ConfigWord.find(GatewayMode.class, s, Map.of()) : null;
            if (unmeasured != null) {
                throw new IllegalArgumentException("the forwarding bench does not measure the " + unmeasured.configName()
                        + " mode; expected one of " + ConfigWord.words(Mode.class));
            }
            return ConfigWord.parse(Mode.class, "forwarding bench mode", s, aliases);
        }

        public String label() {
            return this == REFERENCE ? "bare-xdp-redirect" : name().toLowerCase();
        }
    }

    public enum Sender { LIVE, SKB }

    /** A flow between two DCs of the bench topology. */
    public record Flow(String name, String srcDc, String dstDc) {}

    static final Flow SAME = new Flow("ipv4->ipv4", "a", "d");
    static final List<Flow> FLOWS = List.of(SAME, new Flow("ipv4->ipv6", "a", "b"), new Flow("id->ipv4", "c", "a"));

    /**
     * One measurement. {@code payload} is the XAF payload in bytes, {@code frameBytes} the whole frame.
     * {@code programRunNs}/{@code programRuns}: the kernel's run-time statistics of the XDP program on the gateway's
     * ingress port over the sample (0/0 for modes without one there).
     */
    public record Sample(Mode mode, Sender sender, String flow, int payload, int frameBytes, int run, long sent,
                         long delivered, long gaps, long reordered, double seconds, long gatewayCpuNs, long softirqNs,
                         long programRunNs, long programRuns) {
        public Sample(Mode mode, Sender sender, String flow, int payload, int frameBytes, int run, long sent,
                      long delivered, long gaps, long reordered, double seconds, long gatewayCpuNs, long softirqNs) {
            this(mode, sender, flow, payload, frameBytes, run, sent, delivered, gaps, reordered, seconds, gatewayCpuNs, softirqNs, 0, 0);
        }

        /** CPU time of the ingress XDP program alone per frame it ran on; NaN without one. */
        public double programNsPerPacket() { return programRuns == 0 ? Double.NaN : (double) programRunNs / programRuns; }
        public double pps() { return delivered / seconds; }
        public double gbps() { return delivered * (double) frameBytes * 8 / seconds / 1e9; }
        public double loss() { return sent == 0 ? 0 : Math.max(0, 1 - (double) delivered / sent); }
        public double gatewayNsPerPacket() { return delivered == 0 ? 0 : (double) gatewayCpuNs / delivered; }
        public double softirqNsPerPacket() { return delivered == 0 ? 0 : (double) softirqNs / delivered; }
        /** Gateway CPU time over the time it was measured (the sample and the drain after it): the share of its CPU it used. */
        public double gatewayCpuShare() { return seconds <= 0 ? 0 : gatewayCpuNs / ((seconds + DRAIN_MS / 1e3) * 1e9); }
    }

    /** One RTT probe. */
    public record RttSample(Mode mode, String flow, int run, RttProbe.Rtt rtt) {}

    /** Everything a bench produced. */
    /**
     * {@code liveFramesRefused}: why the live generator was not used (the kernel refuses it; see
     * {@link LiveFrameGenerator#probe}), or null when it was offered to the modes that use it.
     */
    public record Result(Options options, List<Sample> samples, List<RttSample> rtts, String machine, String command,
                         String liveFramesRefused) {
        public Result(Options options, List<Sample> samples, List<RttSample> rtts, String machine, String command) {
            this(options, samples, rtts, machine, command, null);
        }
    }

    /** CPU of the senders and the receivers' NAPI kthreads, and CPU of the gateway (its port kthreads and process). */
    static final int SENDER_CPU = 0, GATEWAY_CPU = 1;
    /** Frames of the live generator's first (and smallest) BPF_PROG_TEST_RUN call; see {@link LiveFrameGenerator#run}. */
    static final int LIVE_FRAMES_PER_CALL = 65_536;

    private final Options options;
    private final PrintStream progress;
    private final List<String> hostDevs = new ArrayList<>();
    /** Gateway port per DC name, filled when the testbed is up. */
    private final Map<String, Node> ingressPorts = new LinkedHashMap<>();
    private int nextSeq = 1;

    /** What the kernel answered to the live generator: where it refuses, the XDP modes measure with socket senders alone. */
    private final LiveFrameGenerator.Support liveFrames;

    public ForwardBench(Options options, PrintStream progress) {
        this(options, progress, options.quick() ? LiveFrameGenerator.Support.YES : LiveFrameGenerator.probe());
    }

    /** With the live generator's answer given, so that a kernel that allows it can also run the bench as one that refuses. */
    ForwardBench(Options options, PrintStream progress, LiveFrameGenerator.Support liveFrames) {
        this.options = options;
        this.progress = progress;
        this.liveFrames = liveFrames;
    }

    /** The senders that measure {@code mode}: the live generator where it can drive the mode and the kernel runs it. */
    static List<Sender> senders(Mode mode, boolean quick, LiveFrameGenerator.Support liveFrames) {
        return switch (mode) {
            case REFERENCE, XDP -> quick || !liveFrames.supported() ? List.of(Sender.SKB) : List.of(Sender.LIVE, Sender.SKB);
            case KERNEL, RELAY, AFXDP -> List.of(Sender.SKB);
        };
    }

    public Result run(String command) throws Exception {
        Topology topology = loadTopology().withPrefix("xb" + HexFormat.of().toHexDigits((byte) ThreadLocalRandom.current().nextInt()));
        Path stateDir = Files.createTempDirectory("xaf-bench-state");
        Testbed testbed = new Testbed(stateDir);
        List<Sample> samples = new ArrayList<>();
        List<RttSample> rtts = new ArrayList<>();
        AutoCloseable programStats = enableProgramStats();
        try {
            progress.println("bench: bringing up " + topology.name() + " (prefix " + topology.prefix() + ")");
            TestbedState state = testbed.up(topology);
            IdentifierPlan plan = IdentifierPlan.build(state, 9, 0x7e57c0de);
            String gwNs = state.gatewayNamespace("gw");
            List<String> portDevs = new ArrayList<>();
            ingressPorts.clear();
            for (Flow f : FLOWS) ingressPorts.putIfAbsent(f.srcDc(), state.gatewayPort("gw", f.srcDc()));
            for (Node p : state.gatewayPorts("gw")) {
                portDevs.add(p.iface());
                Netns.exec(gwNs, "sh", "-c", "echo 1 > /sys/class/net/" + p.iface() + "/threaded");
            }
            // hosts' veths get their own NAPI kthreads too, so the receiver's work can be pinned away from the gateway
            hostDevs.clear();
            for (Flow f : FLOWS) {
                for (String dc : List.of(f.srcDc(), f.dstDc())) {
                    Node h = state.host(dc, 0);
                    if (hostDevs.contains(h.iface())) continue;
                    hostDevs.add(h.iface());
                    Netns.exec(h.namespace(), "sh", "-c", "echo 1 > /sys/class/net/" + h.iface() + "/threaded");
                }
            }
            if (!liveFrames.supported()) {
                progress.println("bench: no live generator: " + liveFrames.reason() + "; the reference and xdp modes are measured"
                        + " with socket (skb) senders only");
            }
            if (pinning()) progress.printf("bench: pinning senders and receivers to CPU %d, the gateway to CPU %d%n", SENDER_CPU, GATEWAY_CPU);
            for (int run = 1; run <= options.runs(); run++) {
                for (Mode mode : options.modes()) {
                    progress.printf("bench: run %d/%d, mode %s%n", run, options.runs(), mode.label());
                    runMode(state, plan, mode, run, portDevs, samples, rtts);
                }
            }
        } finally {
            if (programStats != null) programStats.close();
            testbed.down(topology.prefix());
            try (var files = Files.walk(stateDir)) {
                for (Path p : files.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
            }
        }
        return new Result(options, samples, rtts, Machine.describe(), command,
                options.quick() || liveFrames.supported() ? null : liveFrames.reason());
    }

    /**
     * Kernel run-time statistics for every BPF program during the whole bench (all modes pay the same two clock
     * reads per program run), for the program ns/packet column; null with a warning when the kernel refuses.
     */
    private AutoCloseable enableProgramStats() {
        try {
            return ProgramRunStats.enable();
        } catch (RuntimeException e) {
            progress.println("bench: no BPF run-time statistics (program ns/packet stays empty): " + e.getMessage());
            return null;
        }
    }

    static Topology loadTopology() throws IOException {
        try (InputStream in = ForwardBench.class.getResourceAsStream("/bench/forward-topology.yaml")) {
            if (in == null) throw new IllegalStateException("bench/forward-topology.yaml is missing from the class path");
            return Topology.parse(new String(in.readAllBytes(), StandardCharsets.UTF_8), "classpath:bench/forward-topology.yaml");
        }
    }

    private void runMode(TestbedState state, IdentifierPlan plan, Mode mode, int run, List<String> portDevs,
                         List<Sample> samples, List<RttSample> rtts) throws Exception {
        List<Flow> flows = switch (mode) {
            case REFERENCE, KERNEL -> List.of(SAME);
            case XDP, RELAY, AFXDP -> FLOWS;
        };
        if (!options.flows().isEmpty()) flows = flows.stream().filter(f -> options.flows().contains(f.name())).toList();
        if (flows.isEmpty()) return;
        List<Sender> senders = senders(mode, options.quick(), liveFrames);
        GatewayRunner runner = mode == Mode.REFERENCE ? null : mode.gateway().newRunner();
        RedirectReference reference = null;
        CpuBudget budget = null;
        try {
            if (runner != null) {
                runner.start(state, plan, "gw");
                budget = budget();
                for (Flow f : flows) {
                    if (state.host(f.srcDc(), 0).ip() == null || state.host(f.dstDc(), 0).ip() == null) continue;
                    RttProbe.Rtt r = RttProbe.measure(plan, runner.mode(), rank(plan, f.srcDc()), rank(plan, f.dstDc()),
                            options.quick() ? 100 : 500);
                    rtts.add(new RttSample(mode, f.name(), run, r));
                    progress.printf("bench:   rtt %-11s median %.1f us, p99 %.1f us%n", f.name(), r.medianUs(), r.p99Us());
                }
            } else {
                Node in = state.gatewayPort("gw", SAME.srcDc()), out = state.gatewayPort("gw", SAME.dstDc());
                reference = new RedirectReference(in.namespace(), in.iface(), out.iface());
                budget = budget();
            }
            CpuMeter cpu = new CpuMeter(portDevs, runner == null ? List.of() : runner.processIds());
            CpuMeter hosts = new CpuMeter(hostDevs, List.of());
            for (Flow f : flows) {
                Node src = state.host(f.srcDc(), 0), dst = state.host(f.dstDc(), 0);
                try (XdpSink sink = new XdpSink(dst.namespace(), dst.iface())) {
                    if (options.warmupMs() > 0) {
                        // Every mode gets the same unrecorded warm-up per flow through the skb path: a freshly
                        // attached XDP program, a relay or AF_XDP JVM still compiling its per-form code on its
                        // one pinned CPU. Measuring a gateway process cold would tune that baseline down.
                        measure(plan, mode, Sender.SKB, f, src, dst, Math.min(64, maxPayload(src, dst)), run, sink, cpu, hosts,
                                options.warmupMs());
                    }
                    for (int size : options.sizes()) {
                        int payload = size == 0 ? maxPayload(src, dst) : Math.min(size, maxPayload(src, dst));
                        for (Sender sender : senders) {
                            Sample s = measure(plan, mode, sender, f, src, dst, payload, run, sink, cpu, hosts, options.durationMs());
                            samples.add(s);
                            progress.printf("bench:   %-22s %-4s %-10s %5d B  %9.0f pps  %6.3f Gbit/s  loss %5.2f%%  gw %6.0f ns/pkt  prog %5.0f ns/pkt  gw CPU %4.1f%%%n",
                                    mode.label(), sender.name().toLowerCase(), f.name(), payload, s.pps(), s.gbps(), s.loss() * 100,
                                    s.gatewayNsPerPacket(), s.programNsPerPacket(), s.gatewayCpuShare() * 100);
                        }
                    }
                }
            }
        } finally {
            if (budget != null) budget.close();
            if (reference != null) reference.close();
            if (runner != null) runner.close();
        }
    }

    /**
     * The gateway CPU budget for one mode (null without one): a duty-cycle thread on the gateway's CPU, so the
     * ports' NAPI kthreads and any gateway process get the same share in every mode. Needs the pinning.
     */
    private CpuBudget budget() {
        if (options.gatewayCpuShare() >= 1.0) return null;
        if (!pinning()) throw new IllegalStateException("a gateway CPU budget needs two CPUs (the gateway's own CPU to budget)");
        CpuBudget b = CpuBudget.start(GATEWAY_CPU, options.gatewayCpuShare());
        progress.println("bench:   gateway CPU budget: " + b);
        return b;
    }

    /** Wait after each sample's senders stop, before the counters are read (gateway CPU is measured over it too). */
    static final long DRAIN_MS = 100;

    private Sample measure(IdentifierPlan plan, Mode mode, Sender sender, Flow f, Node src, Node dst, int payload, int run,
                           XdpSink sink, CpuMeter cpu, CpuMeter hosts, long durationMs) {
        GatewayMode addressing = mode == Mode.KERNEL ? GatewayMode.KERNEL : GatewayMode.XDP;
        int srcRank = rank(plan, f.srcDc()), dstRank = rank(plan, f.dstDc());
        IdentifierPlan.Peer peer = plan.addressBook(srcRank).stream().filter(p -> p.rank() == dstRank).findFirst().orElseThrow();
        OuterAddressing a = new OuterAddressing().srcMac(src.macBytes()).dstMac(Node.macBytesOf(peer.nextHopMac()))
                .srcPort(XafHeader.UDP_PORT).dstPort(XafHeader.UDP_PORT).srcId(src.identity()).dstId(peer.networkId());
        if (src.ip() != null) a.srcIp(src.ip()).dstIp(addressing.sendersAddressDestination() ? dst.ip() : peer.nextHopIp());
        byte[] frame = buildFrame(plan, src.form(), a, peer.networkId(), srcRank, dstRank, payload);
        long durationNs = durationMs * 1_000_000L;
        Node ingress = gatewayIngress(src);
        int progId = ingress == null ? 0 : attachedXdpProgram(ingress.namespace(), ingress.iface());
        int senderCpu = pinning() ? SENDER_CPU : -1;
        Map<Long, byte[]> previous = pinning() ? CpuAffinity.pin(pinPlan(cpu, hosts)) : Map.of();
        try {
            ProgramRunStats.Reading progBefore = progId > 0 ? ProgramRunStats.read(progId) : null;
            XdpSink.Counts before = sink.counts();
            CpuMeter.Sample cpuBefore = cpu.sample();
            long t0 = System.nanoTime();
            long sent = sender == Sender.LIVE
                    ? LiveFrameGenerator.run(src.namespace(), src.iface(), frame, durationNs, LIVE_FRAMES_PER_CALL, nextSeq, senderCpu)
                    : SkbSender.run(src.namespace(), src.iface(), frame, src.form(), a, durationNs, options.lowRatePps(), etherType(src.form()), nextSeq, senderCpu);
            nextSeq += (int) sent; // the sink keeps the newest number per source: continue above it
            double seconds = (System.nanoTime() - t0) / 1e9;
            sleep(DRAIN_MS); // drain the veth rings and the relay's socket buffers
            CpuMeter.Sample cpuDelta = cpu.sample().minus(cpuBefore);
            XdpSink.Counts got = sink.counts().minus(before);
            ProgramRunStats.Reading prog = progBefore == null ? new ProgramRunStats.Reading(0, 0) : ProgramRunStats.read(progId).minus(progBefore);
            return new Sample(mode, sender, f.name(), payload, frame.length, run, sent, got.frames(), got.gaps(), got.reordered(),
                    seconds, cpuDelta.gatewayNs(), cpuDelta.softirqNs(), prog.runTimeNs(), prog.runs());
        } finally {
            CpuAffinity.restore(previous);
        }
    }

    /** The gateway port that {@code src}'s frames arrive on (the one facing its DC), or null. */
    private Node gatewayIngress(Node src) {
        return ingressPorts.get(src.datacenter());
    }

    private static final Pattern XDP_PROG_ID = Pattern.compile("\"prog\":\\{\"id\":(\\d+)");

    /** Id of the XDP program attached to {@code iface} in {@code ns} (from `ip -j link`), 0 when none. */
    static int attachedXdpProgram(String ns, String iface) {
        String json = Netns.exec(null, "ip", "-n", ns, "-j", "link", "show", "dev", iface).stdout();
        Matcher m = XDP_PROG_ID.matcher(json);
        return m.find() ? Integer.parseInt(m.group(1)) : 0;
    }

    /** Pinning needs two CPUs: one for senders and receivers, one for the gateway. */
    static boolean pinning() {
        return CpuAffinity.cpuCount() > GATEWAY_CPU;
    }

    /** Gateway threads (port kthreads, gateway process) to the gateway CPU, the hosts' NAPI kthreads to the sender CPU. */
    static Map<Long, Integer> pinPlan(CpuMeter gateway, CpuMeter hosts) {
        Map<Long, Integer> plan = new LinkedHashMap<>();
        for (long tid : hosts.threadIds()) plan.put(tid, SENDER_CPU);
        for (long tid : gateway.threadIds()) plan.put(tid, GATEWAY_CPU);
        return plan;
    }


    static int rank(IdentifierPlan plan, String dc) {
        for (int r = 0; r < plan.worldSize(); r++) if (plan.host(r).datacenter().equals(dc)) return r;
        throw new IllegalArgumentException("no host in " + dc);
    }

    static int maxPayload(Node a, Node b) {
        return Math.min(a.mtu() + EthernetHeader.LENGTH - a.form().outerHeaderLength(),
                b.mtu() + EthernetHeader.LENGTH - b.form().outerHeaderLength()) - XafHeader.LENGTH;
    }

    static int etherType(NetworkForm f) {
        return switch (f) {
            case IPV4 -> EthernetHeader.ETHER_TYPE_IPV4;
            case IPV6 -> EthernetHeader.ETHER_TYPE_IPV6;
            case ID -> EthernetHeader.ETHER_TYPE_XAF_ID;
        };
    }

    static byte[] buildFrame(IdentifierPlan plan, NetworkForm form, OuterAddressing a, int networkId, int src, int dst, int payload) {
        int at = form.outerHeaderLength();
        MemorySegment seg = MemorySegment.ofArray(new byte[at + XafHeader.LENGTH + payload]);
        XafHeader h = new XafHeader().wrap(seg, at).init().type(MessageType.DATA.code()).networkId(networkId)
                .jobId(plan.jobId()).jobToken(plan.jobToken()).srcRank(src).dstRank(dst).payloadLength(payload);
        for (int j = 0; j < payload; j++) seg.set(ValueLayout.JAVA_BYTE, at + XafHeader.LENGTH + j, (byte) (j * 7 + 1));
        new PayloadIntegrity().seal(h);
        int len = new FrameWriter().encapsulate(seg, form, a);
        return seg.asSlice(0, len).toArray(ValueLayout.JAVA_BYTE);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
