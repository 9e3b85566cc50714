#!/usr/bin/python3
"""Split a `perf script` dump of an all-reduce bench into whose CPU it was and what it did.

Reads `perf script` text (perf record -e cpu-clock -a -g) on stdin and sorts every sample by thread:
  endpoint  a worker JVM (its pid is given with --workers)
  fabric    a NAPI kernel thread of the emulated network (hosts', switches', WAN veths: --fabric)
  gateway   a NAPI thread of a gateway port, or a forwarding gateway process (--gateway, --gateway-procs)
  other     anything else on the machine (the bench launcher, other people's builds, idle)
then the endpoint's samples by what their stack shows (the first rule of CATEGORIES whose pattern matches a frame,
leaf to root; the thread name decides GC/JIT). Writes:
  --folded FILE  folded stacks ("role;comm;frame;...;leaf count"), the input of any flame-graph tool
  --svg FILE     a flame graph of the same stacks (no external tools needed)
and prints a Markdown table: each category's share of the endpoint's samples and, given the bench's measured
endpoint/fabric/gateway CPU per datagram event (--endpoint-us etc.), its microseconds per datagram event.

Shares of samples, not absolute times: the machine may be shared, and perf's sampling rate under load is not exact.
"""
import argparse
import collections
import html
import re
import subprocess
import sys

# The rows of the table, in the order docs/TRANSPORT.md shows them.
SEND, RECV, SEAL, SUM, COPY, REDUCE, ACK, IDLE, GCJIT, DISPATCH, OTHERJVM, OTHERK, OTHERJ = (
    "UDP send syscalls (sendmmsg: kernel send path, and its Java wrapper)",
    "UDP receive syscalls (recvmmsg: copy to user, and its Java wrapper)",
    "seal/open (WireSeal: crc32c or MAC)",
    "payload sum (InternetChecksum.sum)",
    "copies (MemorySegment copies, staging buffers)",
    "reduction (sum into the accumulator, bf16)",
    "ACK/timer bookkeeping (acks, retransmit timers, windows)",
    "idle: spin, park, poll and wake-ups",
    "GC and JIT (compiler and GC threads, interpreter)",
    "transport framing and dispatch (headers, peers, messages)",
    "other JVM threads (JFR recorder while profiling, monitor deflation)",
    "other kernel (page faults, interrupts, scheduler)",
    "other Java (JDK, bench harness)",
)
ROWS = [SEND, RECV, SEAL, SUM, COPY, REDUCE, ACK, IDLE, GCJIT, DISPATCH, OTHERJVM, OTHERK, OTHERJ]

# perf: kernel frames of the endpoint's threads, leaf to root; the first rule whose pattern matches a frame decides.
KERNEL_RULES = [(SEND, r"^(__sys_sendmmsg|__sys_sendmsg|__x64_sys_sendmmsg|__x64_sys_sendmsg|__x64_sys_sendto|udp_sendmsg|udp_send_skb)$"),
                (RECV, r"^(__sys_recvmmsg|__sys_recvmsg|__x64_sys_recvmmsg|__x64_sys_recvmsg|__x64_sys_recvfrom|udp_recvmsg)$"),
                (IDLE, r"^(do_sys_poll|__x64_sys_ppoll|__x64_sys_poll|futex_wait|do_futex|__x64_sys_futex|do_nanosleep|"
                       r"hrtimer_nanosleep|__x64_sys_clock_nanosleep|schedule|__schedule|finish_task_switch.*|sched_yield|"
                       r"__x64_sys_sched_yield)$")]
# JFR: Java frames of the transport and main threads (inlined frames included, which perf cannot see), leaf to root.
JAVA_RULES = [(SUM, r"\.InternetChecksum\.sum"),
              (SEAL, r"\.WireSeal[.$]|java\.util\.zip\.CRC32C|javax\.crypto|com\.sun\.crypto"),
              (REDUCE, r"\.FloatSumSink\.|\.Bf16\.|\.reduce|sumInOrder|AllReduce\.combine"),
              (COPY, r"MemorySegment\.copy|SegmentBulkOperations\.copy|copyMemory|System\.arraycopy|\.copyFrom\("),
              (SEND, r"Syscalls\.(sendmmsg|sendmsg|sendto)|UdpDatagramPort\.(send|flush)"),
              (RECV, r"Syscalls\.(recvmmsg|recvmsg|recvfrom)|UdpDatagramPort\.(drain|receivedFrom)"),
              (IDLE, r"IdleStrategy|onSpinWait|LockSupport\.park|sleepUntilWoken|Syscalls\.poll|awaitReceive"),
              (ACK, r"Sender\.onAck|checkRetransmitTimers|retransmit|AckPayload|Bitmaps|ReplayWindow|RecentMessages|LoopTime|"
                    r"NanoClock|[Aa]ck\(|ChunkRing|EarlyChunks|LongArrayPool|PeerState"),
              (DISPATCH, r"io\.xaforward\.(transport|collective|dataplane)"),
              (OTHERJ, r".")]
JIT_GC_THREADS = re.compile(r"^(C1 Compi|C2 Compi|VM Thread|GC Thread|VM Periodic|G1 |Sweeper)")
JAVA_THREADS = re.compile(r"^(xaf-transport|java$|main$)")
KERNEL_RULES = [(n, re.compile(p)) for n, p in KERNEL_RULES]
JAVA_RULES = [(n, re.compile(p)) for n, p in JAVA_RULES]

# The fabric's and the gateway's NAPI threads: the first rule (in this order) with a matching frame anywhere in the stack.
NETWORK_RULES = [(n, re.compile(p)) for n, p in [
    ("IP/UDP delivery up to the receiving socket", r"^(ip_local_deliver|ip6_input|__udp4_lib_rcv|__udp6_lib_rcv|udp_queue_rcv_skb|udp_gro_receive|udp4_gro_receive|udp6_gro_receive)"),
    ("bridge forwarding (switches, WAN segment)", r"^br_handle_frame"),
    ("qdisc (WAN shaping) and veth transmit", r"^(__dev_queue_xmit|htb_|pfifo_|veth_xmit|sch_direct_xmit)"),
    ("copy into XDP headroom (skb_pp_cow_data)", r"^(skb_pp_cow_data|veth_convert_skb_to_xdp_buff)"),
    ("XDP program and redirect", r"^(bpf_prog_|xdp_do_redirect|dev_map_|bq_xmit_all|veth_ndo_xdp_xmit|veth_xdp_xmit|__xdp_build_skb)"),
    ("GRO and veth receive (rest)", r"^(gro_|dev_gro_receive|napi_gro|veth_xdp_rcv|veth_poll)"),
    ("other", r"."),
]]

WATCH = ["handle_softirqs", "net_rx_action", "__napi_poll", "br_handle_frame", "br_nf_pre_routing", "veth_poll",
         "ip_rcv", "udp_queue_rcv_skb"]

HEADER = re.compile(r"^(.+?)\s+(\d+)/(\d+)\s+\[\d+\]")
FRAME = re.compile(r"^\s+[0-9a-f]+\s+(.+?)(?:\s+\((.*)\))?$")


def ids(text):
    return {int(x) for x in re.split(r"[,\s]+", text or "") if x.strip()}


def samples(stream):
    """Yields (comm, pid, tid, frames leaf-first, their DSOs)."""
    head, frames, dsos = None, [], []
    for line in stream:
        line = line.rstrip("\n")
        if not line.strip():
            if head:
                yield head[0], head[1], head[2], frames, dsos
            head, frames, dsos = None, [], []
            continue
        if head is None:
            m = HEADER.match(line)
            if m:
                head = (m.group(1).strip(), int(m.group(2)), int(m.group(3)))
            continue
        m = FRAME.match(line)
        if m:
            sym = re.sub(r"\+0x[0-9a-f]+$", "", m.group(1))
            if sym == "[unknown]" and m.group(2):
                sym = "[" + m.group(2).rsplit("/", 1)[-1] + "]"
            frames.append(sym)
            dsos.append(m.group(2) or "")
    if head:
        yield head[0], head[1], head[2], frames, dsos


def perf_category(comm, frames, dsos):
    """The row of one endpoint sample, or None for Java code (split by JFR)."""
    if JIT_GC_THREADS.search(comm):
        return GCJIT
    if not JAVA_THREADS.search(comm):
        return OTHERJVM
    for f, dso in zip(frames, dsos):
        if dso != "[kernel.kallsyms]":
            break  # the kernel part of the stack ends here
        for name, pattern in KERNEL_RULES:
            if pattern.search(f):
                return name
    if frames and dsos[0] == "[kernel.kallsyms]":
        # Kernel work entered from user space but not through a syscall above: page faults, interrupts.
        return OTHERK
    if frames and frames[0] in ("Interpreter",):
        return GCJIT  # code not compiled yet: JIT warm-up
    return None


def jfr_split(files, t0, t1):
    """Rows of the transport and main threads' JFR execution samples between t0 and t1 (HH:MM:SS, UTC)."""
    rows = collections.Counter()
    for f in files:
        text = subprocess.run(["jfr", "print", "--stack-depth", "64", "--events", "jdk.ExecutionSample", f],
                              capture_output=True, text=True, check=True).stdout
        for event in text.split("jdk.ExecutionSample {")[1:]:
            when = re.search(r"startTime = (\d\d:\d\d:\d\d)", event)
            thread = re.search(r'sampledThread = "([^"]*)"', event)
            if not when or not thread or not JAVA_THREADS.search(thread.group(1)):
                continue
            if t0 and not (t0 <= when.group(1) <= t1):
                continue
            frames = [l.strip() for l in event.split("stackTrace = [", 1)[-1].split("\n")[1:]]
            for frame in frames:
                hit = next((n for n, pat in JAVA_RULES if pat.search(frame)), None)
                if hit and hit != OTHERJ:
                    rows[hit] += 1
                    break
            else:
                rows[OTHERJ] += 1
    return rows


def flamegraph(folded, path, title):
    """A minimal flame graph: root at the bottom, width by samples, a tooltip per frame."""
    root = {"n": 0, "c": collections.OrderedDict()}
    for stack, count in folded.items():
        node = root
        node["n"] += count
        for f in stack.split(";"):
            node = node["c"].setdefault(f, {"n": 0, "c": collections.OrderedDict()})
            node["n"] += count
    total = root["n"] or 1
    width, row = 1600, 16
    depth = [0]

    def walk(node, d):
        depth[0] = max(depth[0], d)
        for child in node["c"].values():
            walk(child, d + 1)
    walk(root, 0)
    height = (depth[0] + 3) * row
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" font-size="11">',
           f'<rect width="100%" height="100%" fill="#fdfdf5"/>',
           f'<text x="8" y="14" font-size="13">{html.escape(title)} ({total} samples; hover for names and shares)</text>']

    def colour(name):
        h = sum(map(ord, name)) % 60
        if name in ("endpoint", "fabric", "gateway", "other"):
            return "#b0c4de"
        if "[k]" in name or name.islower() and "." not in name:
            return f"rgb(230,{120 + h},{60 + h // 2})"  # kernel-ish: orange
        return f"rgb({90 + h},{170 + h // 2},{90 + h // 3})"  # Java and user code: green

    def draw(node, name, x, d):
        w = node["n"] / total * (width - 16)
        if w < 0.3:
            return
        y = height - (d + 1) * row
        share = 100.0 * node["n"] / total
        label = html.escape(name)
        out.append(f'<g><title>{label} ({node["n"]} samples, {share:.2f}%)</title>'
                   f'<rect x="{x + 8:.1f}" y="{y}" width="{w:.1f}" height="{row - 1}" fill="{colour(name)}" rx="2"/>')
        chars = int(w / 6.6)
        if chars >= 3:
            text = name if len(name) <= chars else name[:max(chars - 2, 1)] + ".."
            out.append(f'<text x="{x + 10:.1f}" y="{y + row - 4}">{html.escape(text)}</text>')
        out.append('</g>')
        cx = x
        for cname, child in node["c"].items():
            draw(child, cname, cx, d + 1)
            cx += child["n"] / total * (width - 16)
    cx = 0.0
    for cname, child in root["c"].items():
        draw(child, cname, cx, 1)
        cx += child["n"] / total * (width - 16)
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--workers", required=True, help="worker JVM pids, comma separated")
    a.add_argument("--fabric", default="", help="fabric NAPI thread ids")
    a.add_argument("--gateway", default="", help="gateway NAPI thread ids")
    a.add_argument("--gateway-procs", default="", help="forwarding gateway process ids")
    a.add_argument("--endpoint-us", type=float, help="the bench's endpoint CPU per datagram event (us)")
    a.add_argument("--fabric-us", type=float, help="the bench's fabric CPU per datagram event (us)")
    a.add_argument("--gateway-us", type=float, help="the bench's gateway CPU per datagram event (us)")
    a.add_argument("--jfr", nargs="*", default=[], help="the worker JVMs' JFR recordings (profile settings)")
    a.add_argument("--window", default="", help="HH:MM:SS-HH:MM:SS (UTC): the JFR samples to use, perf's window")
    a.add_argument("--folded", help="write folded stacks here")
    a.add_argument("--svg", help="write a flame graph here")
    a.add_argument("--title", default="perf cpu-clock")
    o = a.parse_args()
    workers, fabric, gateway, gwprocs = ids(o.workers), ids(o.fabric), ids(o.gateway), ids(o.gateway_procs)

    roles = collections.Counter()
    rows = collections.Counter()
    folded = collections.Counter()
    fabric_frames = collections.Counter()
    watch = collections.Counter()  # the emulated network's softirq work, if any still runs in the endpoints' threads
    network_rows = {"fabric": collections.Counter(), "gateway": collections.Counter()}
    java = 0  # endpoint samples in Java code, split below by the JFR samples of the same threads
    for comm, pid, tid, frames, dsos in samples(sys.stdin):
        if pid in workers:
            role = "endpoint"
            row = perf_category(comm, frames, dsos)
            if row is None:
                java += 1
            else:
                rows[row] += 1
            for w in WATCH:
                if any(f == w or f.startswith(w) for f in frames):
                    watch[w] += 1
        elif tid in fabric:
            role = "fabric"
        elif tid in gateway or pid in gwprocs:
            role = "gateway"
        else:
            role = "other"
        roles[role] += 1
        if role == "fabric":
            for f in set(frames):
                fabric_frames[f] += 1
        if role in network_rows:
            network_rows[role][next(n for n, pat in NETWORK_RULES if any(pat.search(f) for f in frames) or n == "other")] += 1
        if role != "other":
            comm_key = "transport" if comm.startswith("xaf-transport") else ("napi" if comm.startswith("napi/") else comm)
            folded[";".join([role, comm_key] + list(reversed(frames)))] += 1

    t0, _, t1 = o.window.partition("-")
    jfr_rows = jfr_split(o.jfr, t0, t1) if o.jfr else collections.Counter()
    jfr_total = sum(jfr_rows.values())
    shares = collections.Counter({r: float(n) for r, n in rows.items()})
    if jfr_total:
        for r, n in jfr_rows.items():
            shares[r] += java * n / jfr_total
    else:
        shares[DISPATCH + " [no JFR: all Java code]"] += java

    ours = roles["endpoint"] + roles["fabric"] + roles["gateway"]
    if o.folded:
        with open(o.folded, "w") as f:
            for stack, n in sorted(folded.items()):
                f.write(f"{stack} {n}\n")
    if o.svg:
        flamegraph(folded, o.svg, o.title)

    print(f"perf samples: endpoint {roles['endpoint']} (of which Java code {java}, split by {jfr_total} JFR samples of "
          f"the same threads), fabric {roles['fabric']}, gateway {roles['gateway']}, other (not this job) "
          f"{roles['other']}\n")
    print("| where the CPU went | share of the endpoint's samples | share of the job's samples | us per datagram event |")
    print("|---|---:|---:|---:|")
    e = roles["endpoint"] or 1
    for name in ROWS + [k for k in shares if k not in ROWS]:
        n = shares[name]
        us = f"{o.endpoint_us * n / e:.2f}" if o.endpoint_us is not None else "-"
        print(f"| endpoint: {name} | {100.0 * n / e:.1f}% | {100.0 * n / max(ours, 1):.1f}% | {us} |")
    eus = f"{o.endpoint_us:.2f}" if o.endpoint_us is not None else "-"
    print(f"| **endpoint, all** | 100% | {100.0 * roles['endpoint'] / max(ours, 1):.1f}% | **{eus}** |")
    for role, us in (("fabric", o.fabric_us), ("gateway", o.gateway_us)):
        what = "hosts', switches' and WAN veths' NAPI threads" if role == "fabric" else "its ports' NAPI threads (XDP redirect)"
        print(f"| {role}: {what} | - | {100.0 * roles[role] / max(ours, 1):.1f}% | {f'{us:.2f}' if us is not None else '-'} |")
    print("\nendpoint samples that carry the network's softirq work (inclusive):")
    for w in WATCH:
        print(f"  {100.0 * watch[w] / e:5.1f}%  {w}")
    for role, counter in network_rows.items():
        if roles[role]:
            print(f"\n{role} threads' samples by what they did:")
            for n, c in counter.most_common():
                print(f"  {100.0 * c / roles[role]:5.1f}%  {n}")
    if roles["fabric"]:
        print("\nfabric threads' samples by frame (inclusive, top 16):")
        for f, n in fabric_frames.most_common(16):
            print(f"  {100.0 * n / roles['fabric']:5.1f}%  {f}")
    if jfr_total:
        print("\nJFR split of the endpoint's Java code (transport and main threads):")
        for r, n in jfr_rows.most_common():
            print(f"  {100.0 * n / jfr_total:5.1f}%  {r}")


if __name__ == "__main__":
    main()
