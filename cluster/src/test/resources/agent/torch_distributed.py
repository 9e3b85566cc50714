# Run by AgentTorchDistributedTest on every rank: torch.distributed over the backend "xaf" (xaforward.torch.distributed),
# with no MASTER_ADDR: the agent is the rendezvous. Exact collectives, the reductions built from allgather, errors for
# what the agent cannot do, and DistributedDataParallel (with and without a bf16 communication hook) equal to one
# process on the global batch.
import hashlib
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import xaforward.torch.distributed as xafdist

assert "MASTER_ADDR" not in os.environ
dist.init_process_group(backend="xaf")
r, n = dist.get_rank(), dist.get_world_size()
assert (r, n) == (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])), (r, n)
assert dist.get_backend() == "xaf", dist.get_backend()
everyone = sum(range(n))


def check(condition, what):
    if not condition:
        raise AssertionError(what)


# sum and average of float32 by the agent; 30,000 floats through the ring of a 64 KiB segment: many pieces
t = torch.arange(30000, dtype=torch.float32) % 997 + r
dist.all_reduce(t)
check(torch.equal(t, (torch.arange(30000, dtype=torch.float32) % 997) * n + everyone), "float32 sum")
a = torch.full((5, 3), 6.0 * r)
dist.all_reduce(a, op=dist.ReduceOp.AVG)
check(torch.equal(a, torch.full((5, 3), 6.0 * everyone / n)), "average")
nc = (torch.arange(600, dtype=torch.float32).reshape(20, 30) + r).t()  # not contiguous
dist.all_reduce(nc)
check(torch.equal(nc, (torch.arange(600, dtype=torch.float32).reshape(20, 30) * n + everyone).t()), "transposed")
for dtype in (torch.float16, torch.bfloat16):
    h = torch.full((7,), float(r + 1), dtype=dtype)
    dist.all_reduce(h)
    check(torch.equal(h, torch.full((7,), float(everyone + n), dtype=dtype)), "sum of %s" % dtype)

# reductions built from allgather: exact, in the tensor's own dtype
m = torch.tensor([float(r), -float(r), 2.0 + r])
for op, expected in ((dist.ReduceOp.MAX, [n - 1.0, 0.0, 1.0 + n]), (dist.ReduceOp.MIN, [0.0, 1.0 - n, 2.0])):
    x = m.clone()
    dist.all_reduce(x, op=op)
    check(x.tolist() == expected, "%s: %s" % (op, x))
p = torch.tensor([r + 1.0])
dist.all_reduce(p, op=dist.ReduceOp.PRODUCT)
product = 1.0
for k in range(n):
    product *= k + 1
check(p.item() == product, "product %s" % p)
big = torch.tensor([2 ** 40 + r, -r], dtype=torch.int64)  # beyond float32's 24 bits: summed as int64
dist.all_reduce(big)
check(big.tolist() == [n * 2 ** 40 + everyone, -everyone], "int64 sum %s" % big)
bits = torch.tensor([1 << r, 0b111], dtype=torch.int32)
dist.all_reduce(bits, op=dist.ReduceOp.BOR)
check(bits.tolist() == [(1 << n) - 1, 0b111], "bor %s" % bits)
bits = torch.tensor([1 << r, 0b111], dtype=torch.int32)
dist.all_reduce(bits, op=dist.ReduceOp.BAND)
check(bits.tolist() == [0 if n > 1 else 1, 0b111], "band %s" % bits)
d = torch.tensor([1.0 + 1e-12 * (r + 1)], dtype=torch.float64)  # float32 would lose the 1e-12s
dist.all_reduce(d)
check(abs(d.item() - (n + 1e-12 * (everyone + n))) < 1e-15, "float64 sum %r" % d.item())

# broadcast: bit for bit, any dtype, any length
b = torch.tensor([r * 7 + 1, 2, 3], dtype=torch.int16)  # 6 bytes
dist.broadcast(b, src=n - 1)
check(b.tolist() == [(n - 1) * 7 + 1, 2, 3], "int16 broadcast %s" % b)
flags = torch.tensor([r == 1, True, False])
dist.broadcast(flags, src=1)
check(flags.tolist() == [True, True, False], "bool broadcast %s" % flags)
long_one = torch.arange(20000, dtype=torch.float64) * (r + 1)  # 160 KB: more than the ring holds
dist.broadcast(long_one, src=2 % n)
check(torch.equal(long_one, torch.arange(20000, dtype=torch.float64) * (2 % n + 1)), "long broadcast")

# allgather, all_gather_into_tensor, reduce_scatter, reduce_scatter_tensor, reduce
mine = torch.tensor([r, 10 * r, 100 * r], dtype=torch.int16)
outs = [torch.zeros(3, dtype=torch.int16) for _ in range(n)]
dist.all_gather(outs, mine)
check([o.tolist() for o in outs] == [[k, 10 * k, 100 * k] for k in range(n)], "all_gather %s" % outs)
flat = torch.zeros(3 * n, dtype=torch.int16)
dist.all_gather_into_tensor(flat, mine)
check(flat.tolist() == [v for k in range(n) for v in (k, 10 * k, 100 * k)], "all_gather_into_tensor %s" % flat)
pieces = [torch.full((4,), float(10 * k + r)) for k in range(n)]
out = torch.zeros(4)
dist.reduce_scatter(out, pieces)
check(torch.equal(out, torch.full((4,), float(10 * r * n + everyone))), "reduce_scatter %s" % out)
whole = torch.arange(2 * n, dtype=torch.float32) + r
part = torch.zeros(2)
dist.reduce_scatter_tensor(part, whole)
check(part.tolist() == [float((2 * r) * n + everyone), float((2 * r + 1) * n + everyone)], "reduce_scatter_tensor")
parts = torch.tensor([r * 3 + k for k in range(n)], dtype=torch.int64)
got = torch.zeros(1, dtype=torch.int64)
dist.reduce_scatter_tensor(got, parts, op=dist.ReduceOp.MAX)
check(got.item() == (n - 1) * 3 + r, "reduce_scatter_tensor max %s" % got)
red = torch.full((3,), float(r))
dist.reduce(red, dst=0)
check(torch.equal(red, torch.full((3,), float(everyone if r == 0 else r))), "reduce %s" % red)

# several at once, more bytes than the ring: pieces wait for ring space, results stay in order
tensors = [torch.full((3000,), float(k * 100 + r)) for k in range(12)]
works = [dist.all_reduce(x, async_op=True) for x in tensors]
for k, (w, x) in enumerate(zip(works, tensors)):
    w.wait()
    check(torch.equal(x, torch.full((3000,), float(k * 100 * n + everyone))), "async %d" % k)
fut = dist.all_reduce(torch.ones(2), async_op=True).get_future()
check(fut.wait()[0].tolist() == [float(n)] * 2, "future value")
dist.barrier()

# what the agent cannot do: an error naming the call, and the group stays usable
for call, run in (("send", lambda: dist.send(torch.ones(1), dst=(r + 1) % n)),
                  ("recv", lambda: dist.recv(torch.ones(1), src=(r + 1) % n)),
                  ("all_to_all_single", lambda: dist.all_to_all_single(torch.zeros(n), torch.ones(n))),
                  ("gather", lambda: dist.gather(torch.ones(1), [torch.ones(1)] * n if r == 0 else None, dst=0))):
    try:
        run()
        raise AssertionError("%s did not raise" % call)
    except NotImplementedError as e:
        check("does not support %s" % call in str(e), str(e))
        print("REFUSED %s: %s" % (call, e), flush=True)

# ranks that issue different collectives: every rank's wait() raises the agent's error; none hangs
try:
    dist.all_reduce(torch.ones(8 if r == 0 else 4))
    raise AssertionError("a mismatched all_reduce did not raise")
except Exception as e:
    check("differs across ranks" in str(e), str(e))
    print("MISMATCH %s" % e, flush=True)
ok = torch.ones(1)
dist.all_reduce(ok)
check(ok.item() == n, "in step again")

# DistributedDataParallel: equal to one process on the global batch
PER_RANK = 4


def make():
    torch.manual_seed(123)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.Tanh(),
                               torch.nn.Linear(16, 3))


def digest(module):
    h = hashlib.sha256()
    for name, t in sorted(module.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().numpy().tobytes())
    return h.hexdigest()


def train(hook, tolerance):
    local = make()
    with torch.no_grad():  # every rank starts elsewhere: DDP's constructor broadcasts rank 0's weights
        torch.manual_seed(1000 + r)
        for q in local.parameters():
            q.add_(torch.randn_like(q))
    reference = make()
    with torch.no_grad():
        torch.manual_seed(1000)
        for q in reference.parameters():
            q.add_(torch.randn_like(q))
    model = DDP(local, bucket_cap_mb=0.001)  # 1 KB buckets: several, the first sent while backward runs
    if hook is not None:
        model.register_comm_hook(None, hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    data = torch.Generator().manual_seed(7)
    worst = 0.0
    for _ in range(4):
        x = torch.randn(PER_RANK * n, 6, generator=data)
        y = torch.randint(0, 3, (PER_RANK * n,), generator=data)
        mine = slice(r * PER_RANK, (r + 1) * PER_RANK)
        optimizer.zero_grad()
        F.cross_entropy(model(x[mine]), y[mine]).backward()
        optimizer.step()
        reference_optimizer.zero_grad()
        F.cross_entropy(reference(x), y).backward()
        reference_optimizer.step()
        for a, b in zip(local.parameters(), reference.parameters()):
            worst = max(worst, (a - b).abs().max().item())
    check(worst < tolerance, "DDP (hook %s) differs from one process by %g" % (hook, worst))
    name = hook.__name__ if hook is not None else "none"
    print("RESULT hook=%s weight_diff=%.3g weights=%s" % (name, worst, digest(local)), flush=True)


train(None, 1e-5)
train(xafdist.bf16_hook, 5e-3)  # bf16 keeps 8 bits of mantissa (measured: 9e-4)

dist.destroy_process_group()
print("PASS rank", r, flush=True)
