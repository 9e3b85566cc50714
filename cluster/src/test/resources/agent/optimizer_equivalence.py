# Run by AgentPythonTest on every rank: DistributedOptimizer over the agents gives the gradients and weights of one
# process training on the global batch.
import hashlib

import torch
import torch.nn.functional as F

import xaforward.torch as xaf

xaf.init()
r, n = xaf.rank(), xaf.size()
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


def train(passes, steps, data_seed):
    model = make()
    with torch.no_grad():  # every rank starts elsewhere: broadcast_parameters must make them one
        torch.manual_seed(1000 + r)
        for p in model.parameters():
            p.add_(torch.randn_like(p))
    xaf.broadcast_parameters(model.state_dict(), root_rank=0)
    reference = make()
    reference.load_state_dict(model.state_dict())
    optimizer = xaf.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                         named_parameters=model.named_parameters(), backward_passes_per_step=passes,
                                         bucket_bytes=512)  # several buckets, the first started during backward
    assert isinstance(optimizer, torch.optim.SGD)
    reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    xaf.broadcast_optimizer_state(optimizer, root_rank=0)
    data = torch.Generator().manual_seed(data_seed)
    worst_grad = worst_weight = 0.0
    for _ in range(steps):
        x = torch.randn(PER_RANK * n, 6, generator=data)
        y = torch.randint(0, 3, (PER_RANK * n,), generator=data)
        mine = slice(r * PER_RANK, (r + 1) * PER_RANK)
        optimizer.zero_grad()
        for part in torch.chunk(torch.arange(PER_RANK * n)[mine], passes):
            (F.cross_entropy(model(x[part]), y[part]) / passes).backward()
        optimizer.synchronize()
        reference_optimizer.zero_grad()
        F.cross_entropy(reference(x), y).backward()
        for p, q in zip(model.parameters(), reference.parameters()):
            worst_grad = max(worst_grad, (p.grad - q.grad).abs().max().item())
        optimizer.step()
        reference_optimizer.step()
        for p, q in zip(model.parameters(), reference.parameters()):
            worst_weight = max(worst_weight, (p - q).abs().max().item())
    assert worst_grad < 1e-6, "gradients differ from the global batch's by %g" % worst_grad
    assert worst_weight < 1e-5, "weights differ from one process's by %g" % worst_weight
    print("RESULT passes=%d grad_diff=%.3g weight_diff=%.3g weights=%s" % (passes, worst_grad, worst_weight,
                                                                         digest(model)), flush=True)


train(passes=1, steps=5, data_seed=7)
train(passes=2, steps=3, data_seed=8)
print("PASS rank", r, flush=True)
