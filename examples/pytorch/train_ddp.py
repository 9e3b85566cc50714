"""Train a small GPT with DistributedDataParallel over Gloo or over XAForward's torch.distributed backend "xaf".

The model, the optimizer and the data are train_gpt.py's; this is train_gpt.py made data-parallel as a
torch.distributed user writes it, with DistributedDataParallel.

The two runs differ only in the word given to --backend: `import xaforward.torch.distributed` registers the backend
"xaf" (as a vendor's package registers its backend), and init_process_group takes the word. Over "xaf" each rank's
collectives go through its `xaf agent`, and so through XAF gateways between data centers that Gloo cannot span
(docs/PYTORCH.md, "torch.distributed backend").

Everything is seeded and every process draws the same global batch at every step and trains on its rank's slice of
it, as train_gpt_xaf.py does; DDP starts every rank from rank 0's weights and averages the gradients.

    torchrun --nproc_per_node 4 examples/pytorch/train_ddp.py --backend gloo --data DIR   (Gloo, one host)
    xaf train --python examples/pytorch/train_ddp.py -- --backend xaf --data DIR     (emulated data centers)

Prints one line per step (`step N/STEPS loss L lr R T ms`, L the loss of this process's slice of the batch) and, at
the end, a checksum of the weights, equal on all ranks when they hold identical weights.
"""
import argparse
import json
import math
import os
import time
import zlib

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class CausalSelfAttention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in self.qkv(x).split(c, dim=2))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        causal = torch.ones(t, t, dtype=torch.bool).tril()  # a token sees itself and the tokens before it
        scores = scores.masked_fill(~causal, float("-inf"))
        return self.proj((scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, context, layers, width, heads):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.wte.weight  # tied: the output layer reads the token embedding
        for name, p in self.named_parameters():  # GPT-2's initialisation
            if p.dim() == 2:
                residual = name.endswith("attn.proj.weight") or name.endswith("mlp.2.weight")
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers) if residual else 0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, tokens, targets):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1]))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def learning_rate(step, args):
    """Linear warm-up to --lr, then a cosine decay to --min-lr at the last step (nanoGPT's get_lr)."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (args.lr - args.min_lr)


def global_batch(data, step, args):
    """The whole batch of one step: --batch random windows, drawn from a generator seeded by --seed and the step, so
    every process draws the same ones whatever its rank."""
    generator = torch.Generator().manual_seed(args.seed * 1_000_003 + step)
    starts = torch.randint(len(data) - args.context - 1, (args.batch,), generator=generator).tolist()
    windows = torch.stack([torch.from_numpy(data[s:s + args.context + 1].astype(np.int64)) for s in starts])
    return windows[:, :-1], windows[:, 1:]


def weights_checksum(model):
    """CRC-32 of every parameter's bytes in order: equal on every process exactly when the weights are identical."""
    crc = 0
    for p in model.parameters():
        crc = zlib.crc32(p.detach().contiguous().numpy().tobytes(), crc)
    return f"{crc:08x}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["gloo", "xaf"], default="gloo", help="torch.distributed backend")
    parser.add_argument("--data", required=True, help="directory with train.bin (and meta.json), as xaf data prepare writes it")
    parser.add_argument("--vocab", type=int, help="vocabulary size (default: meta.json's vocab_size)")
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--batch", type=int, default=8, help="global batch: windows per step over all processes")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--min-lr", type=float, default=3e-4)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--weight-decay", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (fixed: results depend on it)")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    data = np.memmap(os.path.join(args.data, "train.bin"), dtype=np.uint16, mode="r")
    vocab = args.vocab
    if vocab is None:
        with open(os.path.join(args.data, "meta.json")) as f:
            vocab = json.load(f)["vocab_size"]

    if args.backend == "xaf":
        import xaforward.torch.distributed  # noqa: F401 (registers the backend "xaf" with torch.distributed)
    dist.init_process_group(backend=args.backend)  # rank and world from the launcher (RANK, WORLD_SIZE)
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch % world:
        raise SystemExit(f"--batch {args.batch} does not divide among {world} processes")
    share = args.batch // world

    model = GPT(vocab, args.context, args.layers, args.width, args.heads)
    ddp = DDP(model)  # starts from rank 0's weights; averages the gradients across ranks during backward
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    others = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": matrices, "weight_decay": args.weight_decay},
                                   {"params": others, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95))
    print(f"rank {rank} of {world}: {sum(p.numel() for p in model.parameters())} parameters, "
          f"{len(data)} training tokens, vocabulary {vocab}", flush=True)

    for step in range(args.steps):
        start = time.perf_counter()
        lr = learning_rate(step, args)
        for group in optimizer.param_groups:
            group["lr"] = lr
        inputs, targets = global_batch(data, step, args)
        mine = slice(rank * share, (rank + 1) * share)
        loss = ddp(inputs[mine], targets[mine])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        ms = (time.perf_counter() - start) * 1e3
        print(f"step {step + 1}/{args.steps} loss {loss.item():.6f} lr {lr:.3e} {ms:.1f} ms", flush=True)
    print(f"rank {rank} weights checksum {weights_checksum(model)}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
