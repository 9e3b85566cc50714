package io.xaforward.bench.train;

import io.xaforward.collective.Algorithm;
import io.xaforward.collective.CollectiveConfig;
import io.xaforward.collective.CollectiveGroup;
import io.xaforward.collective.Collectives;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.XafHeader;
import io.xaforward.testbed.Layout;
import io.xaforward.testbed.Node;
import io.xaforward.testbed.TestbedState;
import io.xaforward.testbed.Topology;
import io.xaforward.testbed.plan.IdentifierPlan;
import io.xaforward.training.DataParallelTrainer;
import io.xaforward.training.DjlRuntime;
import io.xaforward.training.StepStats;
import io.xaforward.training.TextDataset;
import io.xaforward.training.TokenDataset;
import io.xaforward.training.TrainerConfig;
import io.xaforward.transport.AddressBook;
import io.xaforward.transport.DatagramPort;
import io.xaforward.transport.EthernetPeer;
import io.xaforward.transport.InetPeer;
import io.xaforward.transport.PacketDatagramPort;
import io.xaforward.transport.ReliableTransport;
import io.xaforward.transport.TransportConfig;
import io.xaforward.transport.UdpDatagramPort;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;

/**
 * One rank of a distributed training job, run by {@link TrainingJob} as its own JVM inside the rank's host
 * namespace: {@code WorkerMain JOB.properties RANK}. Trains with gradients all-reduced across data centers through
 * the gateways, and reports progress as {@link WorkerLine}s on stdout.
 */
public final class WorkerMain {
    private WorkerMain() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: WorkerMain JOB.properties RANK");
            System.exit(2);
        }
        TrainJobSpec spec = TrainJobSpec.read(Path.of(args[0]));
        int rank = Integer.parseInt(args[1]);
        try {
            run(spec, rank);
        } catch (Throwable t) {
            System.err.println("rank " + rank + ": " + t);
            t.printStackTrace();
            System.out.flush();
            System.exit(1);
        }
        System.exit(0);
    }

    static void run(TrainJobSpec spec, int rank) throws Exception {
        Topology topology = Topology.load(spec.topology()).withPrefix(spec.prefix());
        Layout layout = Layout.of(topology);
        IdentifierPlan plan = IdentifierPlan.build(new TestbedState(topology, layout.hosts(), layout.gatewayPorts()),
                spec.jobId(), spec.jobToken());
        int world = plan.worldSize();
        Node self = plan.host(rank);

        DjlRuntime.load(Path.of(".cache", "djl"), spec.threadsPerWorker());
        TokenDataset all = TextDataset.open(spec.data());
        TokenDataset.Split split = all.split(0.05);

        int minMtu = topology.datacenters().stream().mapToInt(d -> d.mtu()).min().orElseThrow();
        int maxPayload = TransportConfig.maxPayloadForMtu(minMtu, NetworkForm.IPV6.outerHeaderLength() - 14) & ~3;
        TransportConfig.Builder tc = TransportConfig.builder(rank, spec.jobId(), spec.jobToken())
                .maxPayload(Math.min(maxPayload, 1400))
                .windowChunks(512)
                .maxMessageBytes(1L << 30)
                .ackTimeout(Duration.ofSeconds(60));
        if (spec.pacingBytesPerSecond() > 0) tc.pacing(spec.pacingBytesPerSecond(), 0);

        AddressBook.Builder book = AddressBook.builder().add(rank, plan.networkId(rank), selfPeer(self));
        boolean kernel = spec.gatewayMode().equals("kernel");
        for (IdentifierPlan.Peer p : plan.addressBook(rank)) {
            // The kernel forwards on IP addresses: send to the destination itself. Gateways forward on identifiers:
            // send to the next hop of our own network.
            var ip = kernel && !p.direct() ? p.destination().ip() : p.nextHopIp();
            book.add(p.rank(), p.networkId(), self.form() == NetworkForm.ID ? EthernetPeer.of(p.nextHopMac())
                    : new InetPeer(new InetSocketAddress(ip, XafHeader.UDP_PORT)));
        }
        DatagramPort port = self.form() == NetworkForm.ID
                ? new PacketDatagramPort(self.iface(), self.mac(), self.identity(), self.mtu())
                : new UdpDatagramPort(new InetSocketAddress(self.ip(), XafHeader.UDP_PORT));

        int[] dcOfRank = new int[world];
        for (int r = 0; r < world; r++) dcOfRank[r] = plan.datacenterOf(r);
        Algorithm algorithm = switch (spec.algorithm()) {
            case "ring" -> Algorithm.RING;
            case "ps" -> Algorithm.PARAMETER_SERVER;
            default -> Algorithm.HIERARCHICAL;
        };
        TrainerConfig config = TrainerConfig.builder(spec.preset())
                .steps(spec.steps()).globalBatch(spec.globalBatch()).seed(spec.seed())
                .learningRate(spec.learningRate()).warmupSteps(spec.warmupSteps())
                .evalEvery(spec.evalEvery()).threads(spec.threadsPerWorker())
                .build();

        try (ReliableTransport transport = new ReliableTransport(tc.build(), book.build(), port).start();
             Collectives collectives = new Collectives(new CollectiveGroup(rank, world, dcOfRank), transport,
                     CollectiveConfig.defaults().withBucketBytes(spec.bucketBytes()).withAlgorithm(algorithm)
                             .withOperationTimeout(Duration.ofSeconds(120)));
             DataParallelTrainer trainer = new DataParallelTrainer(config, split.train(), split.validation(), rank, world,
                     collectives::allReduceMean)) {
            System.out.println(WorkerLine.format("start", "rank", rank, "params", trainer.parameterCount(),
                    "form", self.form().configName(), "dc", self.datacenter()));
            trainer.train(stats -> report(stats, trainer, spec));
            if (rank == 0) trainer.saveCheckpoint(TrainingJob.finalCheckpoint(spec));
            System.out.println(WorkerLine.format("done", "rank", rank, "checksum", Long.toHexString(trainer.weightChecksum()),
                    "retransmits", transport.stats().retransmits(), "sent_bytes", transport.stats().bytesSent()));
            System.out.flush();
            collectives.barrier(); // nobody closes its transport while a peer may still need an acknowledgement
        }
    }

    private static void report(StepStats s, DataParallelTrainer trainer, TrainJobSpec spec) {
        long step = s.step() + 1;
        boolean checksum = spec.checksumEvery() > 0 && (step % spec.checksumEvery() == 0 || step == spec.steps());
        StringBuilder line = new StringBuilder(WorkerLine.format("step", "step", step,
                "loss", String.format(Locale.ROOT, "%.6f", s.loss()),
                "ms", String.format(Locale.ROOT, "%.2f", s.computeMillis() + s.communicationMillis() + s.optimizerMillis()),
                "compute_ms", String.format(Locale.ROOT, "%.2f", s.computeMillis() + s.optimizerMillis()),
                "comm_ms", String.format(Locale.ROOT, "%.2f", s.communicationMillis()),
                "tok_s", String.format(Locale.ROOT, "%.1f", s.tokensPerSecond())));
        if (s.hasValidationLoss()) line.append(" val=").append(String.format(Locale.ROOT, "%.6f", s.validationLoss()));
        if (checksum) line.append(" checksum=").append(Long.toHexString(trainer.weightChecksum()));
        System.out.println(line);
        System.out.flush();
    }

    private static io.xaforward.transport.Peer selfPeer(Node self) {
        return self.form() == NetworkForm.ID ? EthernetPeer.of(self.mac())
                : new InetPeer(new InetSocketAddress(self.ip(), XafHeader.UDP_PORT));
    }
}
