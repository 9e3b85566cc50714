"""One rank of DiLoCo over Gloo training XAForward's GPT, for `xaf bench train --peers xaf,diloco-gloo`.

The fair baseline of XAF's own DiLoCo trainer (`--sync diloco`): what an ML engineer would write with plain PyTorch.
Model, initial weights, data, AdamW and its schedule, clipping and threads are ddp_gloo_train.py's (imported from
it), so both Gloo peers train XAF's GPT on the very windows XAF's ranks train on. On top:

- inner steps: every step, the gradient is all-reduced among the ranks of this rank's data center only
  (DistributedDataParallel over a torch.distributed group of the DC's ranks; its LAN, never the gateway), then
  AdamW steps. The AdamW state stays local to each rank, as in DiLoCo.
- outer steps: every --sync-every H inner steps (and after the last step, so that the run ends on one set of
  weights), the pseudo-gradient (the global weights minus this DC's weights) is averaged across the data centers,
  and torch.optim.SGD(nesterov=True) with --outer-lr and --outer-momentum (DiLoCo's 0.7 and 0.9 by default; plain
  SGD when the momentum is 0, which Nesterov does not allow) steps the global weights; every rank continues from them.
- the cross-DC average is hierarchical, like XAF's: the pseudo-gradient is the same on every rank of a DC, so the
  rank with local index i of each DC takes the i-th shard of it, averages that shard with the rank of local index i
  of every other DC (a group of one rank per DC), and the DC's ranks all-gather the averaged shards over their LAN.
- --outer-dtype: fp32 is Gloo's own all_reduce. Gloo 1.13 cannot reduce bfloat16 (nor int16) and cannot reduce
  quantized values with scales, so bf16, int8 and int4 exchange the encoded shard with all_gather (bf16 as its
  bytes; int8 and int4 as codes plus one fp32 scale per --outer-block values, symmetric, max-abs scaling; int4 packs
  two codes per byte) and every rank decodes and sums in fp32 in group order, so all DCs get bitwise the same
  average. Between two data centers an all_gather moves as many bytes per direction as a ring all_reduce would in
  that dtype (each side sends its shard once), so the WAN sees the encoded size either way. No error feedback.
- validation (--val, --eval-every): the windows XAF's Evaluator evaluates (written by the bench), rank r taking
  windows r, r + W, ...; the ranks all-reduce count, sum and sum of squares of the per-window mean losses, as
  Evaluator does, and report `val`, `val_se` (standard error), `val_windows` and `val_split_windows` on the step line.
  Evaluations only fall on outer steps (--eval-every a multiple of H), where every rank holds the global weights.

Worker lines as ddp_gloo_train.py's; a step with an outer sync adds `outer_sync=1`, `outer_bytes` (what this rank
sent to the other data centers, payload only) and `checksum` (every rank must hold the same weights there).
`comm_ms` is the exposed inner communication (as ddp_gloo_train.py measures it) plus the outer sync's time.
"""
import datetime
import math
import os
import time

from ddp_gloo_train import (adamw, arguments, build_model, checksum, fastest_pass_ms, local_batches, rate,
                             tcp_retransmissions)
from xaf_torch_rank import interface_of, line

DTYPES = ("fp32", "bf16", "int8", "int4")


def parse():
    p = arguments()
    p.add_argument("--dc-of-rank", help="comma-separated data center of every rank, e.g. a,a,b,b (default: one DC per rank)")
    p.add_argument("--sync-every", type=int, default=50, help="inner steps between outer steps (H)")
    p.add_argument("--outer-lr", type=float, default=0.7)
    p.add_argument("--outer-momentum", type=float, default=0.9)
    p.add_argument("--outer-dtype", choices=DTYPES, default="fp32")
    p.add_argument("--outer-block", type=int, default=128, help="values per fp32 scale for int8 and int4")
    p.add_argument("--val", help="int32 tokens: the validation windows (context + 1 tokens each) to evaluate")
    p.add_argument("--val-split-windows", type=int, default=0, help="windows the whole validation split holds")
    p.add_argument("--eval-every", type=int, default=0, help="evaluate after every N steps and after the last (0: never)")
    p.add_argument("--eval-batch", type=int, default=8, help="windows per evaluation forward pass")
    a = p.parse_args()
    a.dcs = a.dc_of_rank.split(",") if a.dc_of_rank else [str(r) for r in range(a.world)]
    if len(a.dcs) != a.world:
        raise SystemExit(f"xaf: --dc-of-rank names {len(a.dcs)} ranks, the world has {a.world}")
    if a.sync_every < 1:
        raise SystemExit(f"xaf: --sync-every must be >= 1, was {a.sync_every}")
    if a.outer_block < 2 or a.outer_block % 2:
        raise SystemExit(f"xaf: --outer-block must be an even number >= 2, was {a.outer_block}")
    if a.eval_every < 0 or (a.eval_every > 0 and a.eval_every % a.sync_every):
        raise SystemExit(f"xaf: --eval-every {a.eval_every} must be a multiple of --sync-every {a.sync_every}: "
                         "only outer steps leave every rank on the global weights")
    if a.eval_every > 0 and not a.val:
        raise SystemExit("xaf: --eval-every needs --val")
    if a.global_batch % a.world:
        raise SystemExit(f"xaf: global batch {a.global_batch} does not divide by world size {a.world}")
    return a


class Topology:
    """Which ranks share a data center, and the torch.distributed groups of the inner and the outer all-reduce."""

    def __init__(self, a, dist):
        names = list(dict.fromkeys(a.dcs))  # data centers in order of their first rank
        self.members = {dc: [r for r in range(a.world) if a.dcs[r] == dc] for dc in names}
        sizes = {len(m) for m in self.members.values()}
        if len(sizes) != 1:
            raise SystemExit(f"xaf: every data center needs as many ranks: {self.members}")
        self.ranks_per_dc = sizes.pop()
        self.dc_count = len(names)
        self.dc = a.dcs[a.rank]
        self.local_index = self.members[self.dc].index(a.rank)
        self.dc_group = self.cross_group = None
        if dist is None:
            return
        # Every rank creates every group, in the same order (torch.distributed requires it).
        for dc in names:
            g = dist.new_group(self.members[dc])
            if dc == self.dc:
                self.dc_group = g
        for i in range(self.ranks_per_dc):
            g = dist.new_group([self.members[dc][i] for dc in names])
            if i == self.local_index:
                self.cross_group = g


def encode(shard, dtype, block, torch):
    """The shard as the bytes that cross the WAN (uint8/int8 tensors, plus fp32 scales for int8 and int4)."""
    if dtype == "bf16":
        return [shard.to(torch.bfloat16).view(torch.uint8)]
    levels = 127 if dtype == "int8" else 7
    blocks = shard.reshape(-1, block)
    scales = blocks.abs().amax(dim=1) / levels
    safe = torch.where(scales > 0, scales, torch.ones_like(scales))
    codes = torch.clamp(torch.round(blocks / safe[:, None]), -levels, levels).to(torch.int8).reshape(-1)
    if dtype == "int4":
        nibbles = (codes + 8).to(torch.uint8).reshape(-1, 2)  # 1..15
        codes = nibbles[:, 0] | (nibbles[:, 1] << 4)
    return [codes, scales]


def decode(parts, dtype, block, torch):
    if dtype == "bf16":
        return parts[0].view(torch.bfloat16).float()
    codes, scales = parts
    if dtype == "int4":
        low = (codes & 0x0F).to(torch.int8) - 8
        high = (codes >> 4).to(torch.int8) - 8
        codes = torch.stack([low, high], dim=1).reshape(-1)
    return (codes.float().reshape(-1, block) * scales[:, None]).reshape(-1)


def cross_dc_mean(delta, topo, a, dist, torch):
    """The mean of every DC's pseudo-gradient, on every rank; returns it and the bytes this rank sent across DCs."""
    if dist is None or topo.dc_count == 1:
        return delta, 0
    n = delta.numel()
    per = math.ceil(n / topo.ranks_per_dc / a.outer_block) * a.outer_block  # shard length, whole blocks
    padded = torch.zeros(per * topo.ranks_per_dc)
    padded[:n] = delta
    shard = padded[topo.local_index * per:(topo.local_index + 1) * per].clone()
    others = topo.dc_count - 1
    if a.outer_dtype == "fp32":
        dist.all_reduce(shard, group=topo.cross_group)
        shard /= topo.dc_count
        # A ring all-reduce among D DCs sends 2 (D - 1) / D of the shard from each.
        sent = 2 * others * shard.numel() * 4 // topo.dc_count
    else:
        parts = encode(shard, a.outer_dtype, a.outer_block, torch)
        total = torch.zeros(per)
        gathered = []
        for part in parts:
            into = [torch.empty_like(part) for _ in range(topo.dc_count)]
            dist.all_gather(into, part, group=topo.cross_group)
            gathered.append(into)
        for d in range(topo.dc_count):  # same order on every rank: bitwise the same sum everywhere
            total += decode([g[d] for g in gathered], a.outer_dtype, a.outer_block, torch)
        shard = total / topo.dc_count
        sent = others * sum(p.numel() * p.element_size() for p in parts)
    if topo.ranks_per_dc > 1:
        pieces = [torch.empty(per) for _ in range(topo.ranks_per_dc)]
        dist.all_gather(pieces, shard, group=topo.dc_group)
        return torch.cat(pieces)[:n], sent
    return shard[:n], sent


def main():
    a = parse()
    if a.world > 1:
        os.environ["GLOO_SOCKET_IFNAME"] = interface_of(a.ip)
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)

    model = build_model(a, torch)
    parameters = list(model.parameters())
    count = sum(w.numel() for w in parameters)
    mine = local_batches(a, torch)

    dist = None
    if a.world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=f"tcp://{a.master}:{a.port}", rank=a.rank, world_size=a.world,
                                timeout=datetime.timedelta(seconds=120))
    topo = Topology(a, dist)
    trained = model
    if dist is not None and topo.ranks_per_dc > 1:
        from torch.nn.parallel import DistributedDataParallel
        trained = DistributedDataParallel(model, process_group=topo.dc_group, bucket_cap_mb=a.bucket_mb)
    line("start", rank=a.rank, params=count, backend="gloo" if dist else "none", torch=torch.__version__,
         bucket_mb=a.bucket_mb, threads=torch.get_num_threads(), sync="diloco", sync_every=a.sync_every,
         outer_dtype=a.outer_dtype, data_centers=topo.dc_count, ranks_per_dc=topo.ranks_per_dc)

    optimizer = adamw(a, parameters, torch)
    # The global weights and the outer optimizer; identical on every rank by construction.
    outer = torch.nn.Parameter(torch.cat([w.detach().reshape(-1) for w in parameters]).clone())
    outer_optimizer = torch.optim.SGD([outer], lr=a.outer_lr, momentum=a.outer_momentum,
                                      nesterov=a.outer_momentum > 0)

    validation = None
    if a.val:
        windows = os.path.getsize(a.val) // 4 // (a.context + 1)
        validation = torch.from_file(a.val, shared=False, size=windows * (a.context + 1),
                                     dtype=torch.int32).reshape(windows, a.context + 1).long()

    def evaluate():
        """Evaluator.evaluate: this rank's windows, then count, sum and sum of squares over all ranks."""
        totals = torch.zeros(3, dtype=torch.float64)
        shard = validation[a.rank::a.world]
        with torch.no_grad():
            for i in range(0, shard.shape[0], a.eval_batch):
                batch = shard[i:i + a.eval_batch]
                logits = model(batch[:, :-1])
                per_window = F.cross_entropy(logits.reshape(-1, a.vocab), batch[:, 1:].reshape(-1),
                                             reduction="none").reshape(batch.shape[0], -1).mean(dim=1).double()
                totals += torch.stack([torch.tensor(float(batch.shape[0]), dtype=torch.float64), per_window.sum(),
                                       (per_window * per_window).sum()])
        if dist is not None:
            dist.all_reduce(totals)
        n, total, squares = totals.tolist()
        mean = total / n
        se = math.sqrt(max(0.0, (squares - total * mean) / (n - 1)) / n) if n > 1 else float("nan")
        return dict(val=f"{mean:.6f}", val_se=f"{se:.6f}", val_windows=int(n),
                    val_split_windows=a.val_split_windows or int(n))

    def forward_backward(batch):
        loss = F.cross_entropy(trained(batch[:, :-1]).reshape(-1, a.vocab), batch[:, 1:].reshape(-1))
        loss.backward()
        return loss

    local_ms = math.inf
    if trained is not model:
        with trained.no_sync():
            local_ms = fastest_pass_ms(forward_backward, mine[0])
        optimizer.zero_grad(set_to_none=True)

    retransmissions = tcp_retransmissions()
    tokens_per_step = a.global_batch * a.context
    outer_steps = 0
    for step in range(a.steps):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = forward_backward(mine[step])
        synced = time.perf_counter()
        norm = torch.nn.utils.clip_grad_norm_(parameters, a.clip) if a.clip > 0 else torch.tensor(0.0)
        lr = rate(a, step)
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.step()
        inner_end = time.perf_counter()
        outer_sync = (step + 1) % a.sync_every == 0 or step + 1 == a.steps
        sent = 0
        if outer_sync:
            with torch.no_grad():
                delta = outer.detach() - torch.cat([w.detach().reshape(-1) for w in parameters])
                outer.grad, sent = cross_dc_mean(delta, topo, a, dist, torch)
                outer_optimizer.step()
                offset = 0
                for w in parameters:
                    w.copy_(outer[offset:offset + w.numel()].view_as(w))
                    offset += w.numel()
            outer_steps += 1
        end = time.perf_counter()
        ms = (end - start) * 1e3
        inner_comm = max(0.0, (synced - start) * 1e3 - local_ms) if local_ms < math.inf else 0.0
        comm = inner_comm + (end - inner_end) * 1e3
        values = dict(step=step + 1, local_loss=f"{loss.item():.6f}", ms=f"{ms:.2f}", compute_ms=f"{ms - comm:.2f}",
                      comm_ms=f"{comm:.2f}", tok_s=f"{tokens_per_step / (end - start):.1f}", lr=f"{lr:.6g}",
                      grad_norm=f"{norm.item():.6g}")
        if outer_sync:
            values.update(outer_sync=1, outer_bytes=sent, checksum=checksum(parameters))
        if validation is not None and a.eval_every > 0 and ((step + 1) % a.eval_every == 0 or step + 1 == a.steps):
            values.update(evaluate())
        line("step", **values)
    weights = torch.cat([w.detach().reshape(-1) for w in parameters])
    line("done", rank=a.rank, checksum=checksum(parameters), retransmits=tcp_retransmissions() - retransmissions,
         outer_steps=outer_steps, weights_abs_sum=f"{weights.abs().sum().item():.9g}",
         weights_sum=f"{weights.double().sum().item():.9g}")
    if dist is not None:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
