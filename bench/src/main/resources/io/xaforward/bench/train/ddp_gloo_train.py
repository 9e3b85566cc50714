"""One rank of PyTorch DistributedDataParallel over Gloo training XAForward's GPT, for `xaf bench train --peers xaf,ddp-gloo`.

Started by the bench inside the rank's host namespace, pinned where the XAF workers run. It trains the model that
training/GptModel.java builds, with the hyper-parameters of training/TrainerConfig.java's defaults and the bench's
job, on the very token windows the XAF ranks train on:

- model: token + learned position embeddings, pre-LN blocks (LayerNorm eps 1e-5, one fused qkv Linear split into
  q, k, v, causal softmax attention, output projection, 4x exact-erf GELU MLP), final LayerNorm, head tied to the
  token embedding when the preset says so; mean next-token cross-entropy.
- initialisation: with --init, XAF's own initial weights (a .safetensors file under GPT-2's names, as
  SafetensorsExport writes them: Linear weights in Conv1D layout [in, out]); without, GPT-2's scheme (as
  DataParallelTrainer.initializeWeights: every matrix N(0, 0.02), the two residual projections
  N(0, 0.02 / sqrt(2 layers)), LayerNorm gains 1, biases 0) drawn from torch's generator seeded with the seed.
- optimizer: AdamW (betas 0.9/0.95, eps 1e-8), weight decay on matrices only, global-norm clipping of the averaged
  gradient, linear warmup then cosine decay to the minimum rate (LearningRateSchedule.java).
- data: --batches holds, for each step, the global batch of windows (context + 1 int32 tokens) that XAF's
  BatchSampler draws; rank r trains on the r-th contiguous slice, as an XAF rank does.
- DDP over Gloo, bucket_cap_mb 4 by default (XAF's 4 MB buckets; PyTorch's own default is 25), torch intra-op
  threads as the XAF workers' (--threads).

Reports on stdout in the bench's worker-line protocol (`@xaf KIND key=value ...`): `start`, one `step` per step
(local_loss: this rank's loss; the launcher averages the ranks', as XAF's loss is the ranks' mean), `done`.
`comm_ms` is the exposed communication: how much longer the synchronised forward+backward took than the same pass
without synchronisation (DDP's no_sync), timed before training on step 0's batch.

--world 1 is a plain single-process run (no DDP, no process group): the reference a test compares DDP against.

--backend xaf trains the same model through XAForward instead (`xaf bench train --peers pytorch-xaf`): xaforward.torch
with this rank's agent (XAF_AGENT_SOCKET, started beside it by the bench), rank 0's weights broadcast, the gradients
averaged by xaf.DistributedOptimizer (bucket all-reduces started by gradient hooks during backward, waited for by
synchronize() before clipping); comm_ms is measured the same way, against forward+backward before the hooks exist.
"""
import argparse
import datetime
import math
import os
import sys
import time
import zlib

from xaf_torch_rank import interface_of, line, tcp_retransmissions


def fastest_pass_ms(forward_backward, batch):
    """The fastest of three forward+backward passes over `batch` after one warm-up, in ms: what this rank's compute
    alone takes, which comm_ms is measured against."""
    fastest = math.inf
    for i in range(4):
        start = time.perf_counter()
        forward_backward(batch)
        if i > 0:
            fastest = min(fastest, (time.perf_counter() - start) * 1e3)
    return fastest


def read_safetensors(path, torch):
    import json
    import struct
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    tensors = {}
    for name, entry in header.items():
        if entry["dtype"] != "F32":
            raise SystemExit(f"xaf: {path}: {name} is {entry['dtype']}, expected F32")
        start, end = entry["data_offsets"]
        tensors[name] = torch.frombuffer(bytearray(data[8 + n + start:8 + n + end]), dtype=torch.float32).reshape(entry["shape"])
    return tensors


def load_gpt2_weights(model, path, torch):
    """Copies every weight of a GPT-2-named .safetensors file into the model; each parameter must be covered once."""
    names = {"wte.weight": "wte", "wpe.weight": "wpe", "ln_f.weight": "ln_f.weight", "ln_f.bias": "ln_f.bias",
             "lm_head.weight": "lm_head"}
    block = {"ln_1": "ln1", "ln_2": "ln2", "attn.c_attn": "attn.qkv", "attn.c_proj": "attn.proj", "mlp.c_fc": "fc",
             "mlp.c_proj": "proj"}
    own = dict(model.named_parameters())
    loaded = set()
    with torch.no_grad():
        for name, value in read_safetensors(path, torch).items():
            if name in names:
                target = names[name]
            else:
                parts = name.split(".")  # h.N.<module>.<weight|bias>
                target = f"blocks.{parts[1]}.{block['.'.join(parts[2:-1])]}.{parts[-1]}"
                if parts[-1] == "weight" and value.dim() == 2:
                    value = value.T  # Conv1D [in, out] to Linear [out, in]
            if target not in own or own[target].shape != value.shape:
                raise SystemExit(f"xaf: {path}: {name} {tuple(value.shape)} does not fit the model ({target})")
            own[target].copy_(value)
            loaded.add(target)
    if loaded != set(own):
        raise SystemExit(f"xaf: {path} has no weights for {sorted(set(own) - loaded)}")


def arguments():
    """The arguments every rank script of the training bench takes (diloco_gloo_train.py adds its own)."""
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--world", type=int, default=1)
    p.add_argument("--ip", default="127.0.0.1", help="this rank's address")
    p.add_argument("--master", default="127.0.0.1", help="rank 0's address (the TCP store)")
    p.add_argument("--port", type=int, default=29500)
    p.add_argument("--vocab", type=int, required=True)
    p.add_argument("--context", type=int, required=True)
    p.add_argument("--layers", type=int, required=True)
    p.add_argument("--width", type=int, required=True)
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--tied", choices=["true", "false"], required=True)
    p.add_argument("--batches", required=True, help="int32 tokens: steps x global batch x (context + 1)")
    p.add_argument("--global-batch", type=int, required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--min-lr", type=float, required=True)
    p.add_argument("--warmup", type=int, required=True)
    p.add_argument("--weight-decay", type=float, required=True)
    p.add_argument("--clip", type=float, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--bucket-mb", type=float, default=4)
    p.add_argument("--checksum-every", type=int, default=0)
    p.add_argument("--init", help="initial weights: .safetensors under GPT-2's names (XAF's SafetensorsExport)")
    p.add_argument("--backend", choices=["gloo", "xaf"], default="gloo", help="DDP over Gloo, or xaforward.torch through an agent")
    return p


def build_model(a, torch):
    """XAF's GPT (GptModel.java) for the preset shapes in `a`, seeded GPT-2 initialisation or XAF's weights (--init)."""
    import torch.nn as nn
    import torch.nn.functional as F

    class Attention(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = (z.reshape(b, t, self.heads, c // self.heads).transpose(1, 2) for z in self.qkv(x).split(c, dim=2))
            mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
            scores = (q * (1.0 / math.sqrt(c // self.heads))) @ k.transpose(-1, -2) + mask
            return self.proj((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c))

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.ln1, self.attn, self.ln2 = nn.LayerNorm(d, eps=1e-5), Attention(d, heads), nn.LayerNorm(d, eps=1e-5)
            self.fc, self.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.proj(F.gelu(self.fc(self.ln2(x))))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            d = a.width
            self.wte = nn.Parameter(torch.empty(a.vocab, d))
            self.wpe = nn.Parameter(torch.empty(a.context, d))
            self.blocks = nn.ModuleList(Block(d, a.heads) for _ in range(a.layers))
            self.ln_f = nn.LayerNorm(d, eps=1e-5)
            self.lm_head = None if a.tied == "true" else nn.Parameter(torch.empty(a.vocab, d))

        def forward(self, tokens):
            x = self.wte[tokens] + self.wpe[:tokens.shape[1]]
            for block in self.blocks:
                x = block(x)
            return self.ln_f(x) @ (self.wte if self.lm_head is None else self.lm_head).T

    torch.manual_seed(a.seed)
    model = Gpt()
    with torch.no_grad():
        for name, w in model.named_parameters():
            if w.dim() >= 2:
                std = 0.02 / math.sqrt(2 * a.layers) if name.endswith("proj.weight") else 0.02
                w.normal_(0, std)
            else:
                w.fill_(1.0 if name.endswith("ln1.weight") or name.endswith("ln2.weight") or name == "ln_f.weight" else 0.0)
    if a.init:
        load_gpt2_weights(model, a.init, torch)
    return model


def local_batches(a, torch):
    """This rank's slice of every step's global batch: [steps, global batch / world, context + 1] tokens."""
    tokens = torch.from_file(a.batches, shared=False, size=a.steps * a.global_batch * (a.context + 1),
                             dtype=torch.int32).reshape(a.steps, a.global_batch, a.context + 1).long()
    local = a.global_batch // a.world
    return tokens[:, a.rank * local:(a.rank + 1) * local]


def adamw(a, parameters, torch):
    """XAF's AdamW: betas 0.9/0.95, eps 1e-8, weight decay on matrices only."""
    decay = [w for w in parameters if w.dim() >= 2]
    no_decay = [w for w in parameters if w.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, 0.95), eps=1e-8)


def rate(a, step):
    """LearningRateSchedule.at: linear warmup, then cosine decay to the minimum rate."""
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    if step >= a.steps:
        return a.min_lr
    progress = (step - a.warmup) / max(1, a.steps - a.warmup)
    return a.min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (a.lr - a.min_lr)


def checksum(parameters):
    """CRC32 of every parameter's bytes in order: equal on two ranks iff their weights are bitwise equal."""
    crc = 0
    for w in parameters:
        crc = zlib.crc32(w.detach().numpy().tobytes(), crc)
    return format(crc, "x")


def main():
    a = arguments().parse_args()
    if a.global_batch % a.world:
        raise SystemExit(f"xaf: global batch {a.global_batch} does not divide by world size {a.world}")

    xaf_backend = a.world > 1 and a.backend == "xaf"
    if a.world > 1 and not xaf_backend:
        os.environ["GLOO_SOCKET_IFNAME"] = interface_of(a.ip)
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)

    model = build_model(a, torch)
    parameters = list(model.parameters())
    count = sum(w.numel() for w in parameters)
    mine = local_batches(a, torch)

    if xaf_backend:
        import xaforward.torch as xaf
        xaf.init()
        trained = model
    elif a.world > 1:
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel
        dist.init_process_group("gloo", init_method=f"tcp://{a.master}:{a.port}", rank=a.rank, world_size=a.world,
                                timeout=datetime.timedelta(seconds=120))
        # Every rank starts from the same seeded weights; DDP's construction also broadcasts rank 0's.
        trained = DistributedDataParallel(model, bucket_cap_mb=a.bucket_mb)
    else:
        trained = model
    line("start", rank=a.rank, params=count, backend=a.backend if a.world > 1 else "none", torch=torch.__version__,
         bucket_mb=a.bucket_mb, threads=torch.get_num_threads())

    optimizer = adamw(a, parameters, torch)

    def forward_backward(batch):
        loss = F.cross_entropy(trained(batch[:, :-1]).reshape(-1, a.vocab), batch[:, 1:].reshape(-1))
        loss.backward()
        return loss

    # The forward+backward of this rank alone, without the all-reduce: what comm_ms is measured against.
    local_ms = math.inf
    if xaf_backend:  # before DistributedOptimizer registers its hooks: backward alone
        local_ms = fastest_pass_ms(forward_backward, mine[0])
        optimizer.zero_grad(set_to_none=True)
        xaf.broadcast_parameters(model.state_dict(), root_rank=0)
        optimizer = xaf.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                             bucket_bytes=int(a.bucket_mb * (1 << 20)))
    elif a.world > 1:
        with trained.no_sync():
            local_ms = fastest_pass_ms(forward_backward, mine[0])
        optimizer.zero_grad(set_to_none=True)

    retransmissions = tcp_retransmissions()
    tokens_per_step = a.global_batch * a.context
    for step in range(a.steps):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = forward_backward(mine[step])
        if xaf_backend:
            optimizer.synchronize()  # the averaged gradients, before clipping; step() does not reduce again
        synced = time.perf_counter()
        norm = torch.nn.utils.clip_grad_norm_(parameters, a.clip) if a.clip > 0 else torch.tensor(0.0)
        lr = rate(a, step)
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.step()
        end = time.perf_counter()
        ms = (end - start) * 1e3
        comm = max(0.0, (synced - start) * 1e3 - local_ms) if a.world > 1 else 0.0
        values = dict(step=step + 1, local_loss=f"{loss.item():.6f}", ms=f"{ms:.2f}", compute_ms=f"{ms - comm:.2f}",
                      comm_ms=f"{comm:.2f}", tok_s=f"{tokens_per_step / (end - start):.1f}", lr=f"{lr:.6g}",
                      grad_norm=f"{norm.item():.6g}")
        if a.checksum_every > 0 and ((step + 1) % a.checksum_every == 0 or step + 1 == a.steps):
            values["checksum"] = checksum(parameters)
        line("step", **values)
    weights = torch.cat([w.detach().reshape(-1) for w in parameters])
    line("done", rank=a.rank, checksum=checksum(parameters), retransmits=tcp_retransmissions() - retransmissions,
         weights_abs_sum=f"{weights.abs().sum().item():.9g}", weights_sum=f"{weights.double().sum().item():.9g}")
    if a.world > 1 and not xaf_backend:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
