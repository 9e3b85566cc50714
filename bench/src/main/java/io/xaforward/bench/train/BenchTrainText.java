package io.xaforward.bench.train;

/** The fixed prose of the training report: how the runs are set up, and how to read the table. */
final class BenchTrainText {
    private BenchTrainText() {}

    static final String INTRO = """
            ## Setup

            Every job is the same: seed 4242, the same synthetic corpus, hierarchical all-reduce of the flat gradient
            (4 MB buckets), four workers (two per data center), one gateway. Only the endpoint and the gateway mode
            change. The `edge` configuration has two workers instead, one per data center, each host wired straight
            to the gateway (`topologies/two-dc-edge.yaml`, `two-dc-ipv4-edge.yaml`: no switch, no WAN), so that
            every gradient datagram crosses the gateway and nothing else on the way forwards it.

            **The WAN.** Every job of comm-bound and gateway-bound crosses the emulated WAN of its topology (`wan:` in
            `topologies/two-dc-wan.yaml` and `topologies/two-dc-ipv4-wan.yaml`): a namespace between the gateway and
            data center b whose kernel bridges and shapes each direction with HTB to the configured rate, with a
            1000-packet drop-tail queue. Every mode's
            frames cross it as ordinary skbs, so the limit is the same for all. Rate and queue are emulated; delay is
            not (this machine has no netem), so the WAN is thin, not long. See [docs/TOPOLOGY.md](../TOPOLOGY.md).

            **Why earlier same-form comparisons were not fair.** They limited the rate with HTB on the gateway's own
            ports. Frames that the XDP program redirects out of a veth go straight into the peer's ring
            (`ndo_xdp_xmit`) and never pass that port's qdisc: a 50 Mbit/s TBF held kernel-forwarded UDP to
            48.6 Mbit/s while the same flow redirected by XDP arrived at 1999 Mbit/s with 0 packets counted by the
            qdisc. So the "WAN" limited the xdp mode in one direction only (the frames the kernel of the host side
            sent back) and the kernel and relay modes in both, and the xdp mode's queueing and loss behaviour differed
            from the others'. The WAN namespace removes that difference: `WanThroughputTest` offers every mode 1.3x
            the WAN rate in both directions and checks that the WAN carries min(offered, rate) within 5%, never more
            than its rate, and is saturated in at least one direction per mode.

            **Placement.** A gateway is a machine of its own: every job pins the gateway to CPU 1 (the NAPI kernel
            threads of the gateway's ports, where the XDP program runs, where the kernel forwards, tunnels or bridges,
            and where user-space gateways are fed; plus the relay or AF_XDP gateway process) and the four workers and
            the rest of the emulated network (host, switch and WAN veths, each with threaded NAPI) to CPU 0. The same
            for every mode.

            **Gateway modes.** `xdp` (this project), `relay` (Java user-space relay), `afxdp` (Java over AF_XDP
            sockets), `kernel` (Linux forwarding + iptables; same form only, so it runs on the two-IPv4 topology),
            `kernel-tunnel` (IPv4 over VXLAN over IPv6 to the gateway, then Linux forwarding behind the same
            firewall: the Linux-native way to join an IPv4 and an IPv6 DC on this kernel), `direct` (no gateway: one
            flat network; the ideal). Details in [docs/TOPOLOGY.md](../TOPOLOGY.md).

            """;

    /** Under each table when DDP over Gloo ran ({@code --peers xaf,ddp-gloo}). */
    static final String DDP_GLOO = """
            **ddp-gloo** rows: PyTorch DistributedDataParallel over Gloo (Debian's python3-torch, TCP), what an ML
            engineer runs today, trained by `bench/src/main/resources/io/xaforward/bench/train/ddp_gloo_train.py` on
            the same cluster, interleaved run by run with XAF's cells and placed the same way (ranks on CPU 0, the
            gateway's NAPI threads on CPU 1): the same preset shapes (parameter count checked), global batch, steps,
            learning-rate schedule, AdamW settings and gradient clipping, the very token windows XAF's sampler gives
            each rank, 4 MB buckets (`bucket_cap_mb=4`, XAF's bucket size; PyTorch's default is 25), one intra-op
            thread per rank like XAF's workers, and XAF's own initial weights (the trainer's seeded initialisation,
            handed over as a .safetensors file), so its loss follows XAF's step by step (`DdpGlooPeerTest`: within
            1e-6 on one process). `kernel`: the gateway
            namespace forwards with Linux (two IPv4 data centers), its edge firewall opened to new TCP connections for
            the job; `kernel-tunnel`: IPv4 over VXLAN to an IPv6 data center. Its communication share is the exposed
            communication (the synchronised forward+backward's time beyond the same pass without DDP's
            synchronisation, timed before training); its retransmissions are TCP segments retransmitted in the ranks'
            namespaces. **vs ddp-gloo MODE**: XAF's median step relative to DDP's over that path, same configuration
            (negative: XAF's step is shorter; -30% is 30% shorter).

            """;

    /** Under each DiLoCo table ({@code --sync ddp,diloco}, or the diloco-gloo peer). */
    static final String DILOCO = """
            **DDP against DiLoCo.** `ddp` rows all-reduce every step's gradient through the gateway; `diloco` rows
            all-reduce it only inside each data center and, every H steps, average the pseudo-gradient (global weights
            minus the data center's) across the data centers for an outer Nesterov SGD (plain DiLoCo: one fragment,
            no sync delay). Every job evaluates the whole validation split at the same steps (every H and after the
            last), all on XAF's `Evaluator` windows. **training time**: the sum of the step times (the slowest rank's),
            so evaluation, start-up and teardown count for no one. **validation loss at the end**: after the same
            number of steps of the same global batch, so at equal tokens; **gap to DDP**: (this loss - the DDP
            run's) / the DDP run's standard error. **time to DDP's final validation loss**: the training time up to
            the first evaluation at or below the reference DDP run's last figure ("not reached" when none was), so it
            resolves only to evaluation steps. **WAN bytes per step**: both directions of the emulated WAN, from the
            end of step 1 to the end, over those steps (headers included; Gloo's TCP and XAF's UDP alike).
            **diloco-gloo** rows: `diloco_gloo_train.py` (beside `ddp_gloo_train.py`, whose model, weights, windows
            and AdamW it imports): the inner all-reduce is DistributedDataParallel over a torch.distributed group of
            the data center's ranks, the outer average runs hierarchically (one rank per data center per shard, then
            an all-gather inside the data center) with torch.optim.SGD(nesterov=True), the same H, outer learning
            rate, momentum and outer format as XAF's rows. Gloo 1.13 cannot reduce bf16 or quantized values, so bf16,
            int8 and int4 go through all_gather of the encoded shard (int8/int4 with one fp32 scale per 128 values),
            decoded and summed in fp32 in the same order on every rank: between two data centers the WAN carries the
            encoded size, as a reducing all-reduce would. No error feedback.

            """;

    static final String READING = """
            ## How to read the table

            - **time per step**: median over runs of each run's median step time (the slowest rank's), [min, max]
              over runs.
            - **communication share**: mean all-reduce time / (compute + all-reduce) per step.
            - **WAN utilisation**: the busier WAN direction's bytes from the end of step 1 to the end of the job,
              relative to the WAN rate over that window (includes the time the WAN sits idle during compute); "-"
              without a WAN.
            - **workers' core busy, gateway's core busy**: the share of the same window in which CPU 0 (the four
              workers and the emulated network) and CPU 1 (the gateway) ran anything, from /proc/stat. The core
              that is busy all the time sets the pace of the job; the other waits. With a gateway CPU budget the
              gateway's core is busy all the time by construction (the budget's duty-cycle thread runs there).
            - **gateway CPU used**: the CPU time of the gateway's data path (as for the cost per packet below) over
              the same window, as a share of the CPU it may use: its budget when the gateway is budgeted, else its
              core. Near 100% the gateway sets the pace; well below, the workers' core (or the WAN) does.
            - **gateway CPU per packet**: CPU time of the gateway's data path (its ports' and its tunnel devices' NAPI threads, and the
              relay or AF_XDP process; not the xdp mode's control process, which only programs the kernel), from
              /proc/*/schedstat over the same window, divided by the packets that crossed the WAN in both
              directions (without a WAN: the packets that left the gateway's ports). For `direct` it is the bridging
              cost of the switch that replaces the gateway.
            - **drops**: frames the WAN queue dropped plus the gateway's own drop counters (xdp, relay and afxdp
              count theirs), median over runs.
            - **retransmissions**: chunks every rank's transport sent again, summed over ranks, median over runs.
            - Figures from a shared two-core machine are noisy; differences below ~10-30% are not resolvable there.
            """;
}
