# Run by AgentPythonTest on every rank: xaforward.torch's collectives give exact results through the agents.
import os

import torch

import xaforward.torch as xaf

xaf.init()
r, n = xaf.rank(), xaf.size()
assert (r, n, xaf.local_rank()) == (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), r)
everyone = sum(range(n))

t = torch.arange(10, dtype=torch.float32) + 100 * r
xaf.allreduce_(t, op=xaf.Sum)
assert torch.equal(t, torch.arange(10, dtype=torch.float32) * n + 100 * everyone), t

a = torch.full((5, 3), 4.0 * r)
xaf.allreduce_(a)  # Average is the default
assert torch.equal(a, torch.full((5, 3), 4.0 * everyone / n)), a

# 80,000 floats, transposed (not contiguous), through a 64 KiB segment: several pieces
base = torch.arange(80000, dtype=torch.float32).reshape(400, 200) % 1000
big = (base + r).t()
xaf.allreduce_(big, op=xaf.Sum)
assert torch.equal(big, (base * n + everyone).t())

c = torch.ones(3) * r
d = xaf.allreduce(c, op=xaf.Sum)
assert torch.equal(c, torch.ones(3) * r) and torch.equal(d, torch.ones(3) * everyone), (c, d)

h = torch.full((4,), float(r), dtype=torch.float16)
xaf.allreduce_(h, op=xaf.Sum)
assert torch.equal(h, torch.full((4,), float(everyone), dtype=torch.float16)), h

b = torch.tensor([r * 7 + 1, 2, 3], dtype=torch.int16)  # 6 bytes: padded to whole words on the wire
xaf.broadcast_(b, root_rank=n - 1)
assert b.tolist() == [(n - 1) * 7 + 1, 2, 3], b
big_int = torch.tensor([2 ** 40 + r])
xaf.broadcast_(big_int, 1)
assert big_int.item() == 2 ** 40 + 1, big_int


def model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 2))


m = model(seed=r)
m(torch.randn(6, 4))  # moves the running statistics and num_batches_tracked (int64) apart from rank 0's
xaf.broadcast_parameters(m.state_dict(), root_rank=0)
reference = model(seed=0)
reference(torch.randn(6, 4))
# rank 0 drew its batch after seeding with 0 too, so every rank must now hold exactly rank 0's state
for (name, mine), (_, theirs) in zip(sorted(m.state_dict().items()), sorted(reference.state_dict().items())):
    assert torch.equal(mine, theirs), name

xaf.barrier()
print("PASS rank", r, flush=True)
