# Run by AgentPythonTest on two ranks: broadcast_optimizer_state carries a real optimizer state exactly, and a root
# that sends a pickle (whose unpickling would create MARKER) or an absurd length is refused without running anything.
import hashlib
import io
import os
import pickle

import torch

import xaforward.torch as xaf
from xaforward.agent import AgentError

xaf.init()
r = xaf.rank()
marker, control = os.environ["MARKER"], os.environ["CONTROL_MARKER"]


def state_digest(optimizer):
    sd = optimizer.state_dict()
    h = hashlib.sha256(repr(sd["param_groups"]).encode())
    for index in sorted(sd["state"]):
        for key, value in sorted(sd["state"][index].items()):
            h.update(("%d.%s" % (index, key)).encode())
            h.update(value.numpy().tobytes() if torch.is_tensor(value) else repr(value).encode())
    return h.hexdigest()


# 1. An honest root: Adam with moments and step counts after three steps; rank 1's own optimizer is fresh, with
# another learning rate and betas.
torch.manual_seed(5)
model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01 if r == 0 else 0.5, betas=(0.8, 0.95) if r == 0 else (0.9, 0.999))
if r == 0:
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.randn(4, 5)).pow(2).sum().backward()
        optimizer.step()
xaf.broadcast_optimizer_state(optimizer, root_rank=0)
sd = optimizer.state_dict()
assert len(sd["state"]) == 4 and sd["param_groups"][0]["betas"] == (0.8, 0.95), sd["param_groups"]
assert float(sd["state"][0]["step"]) == 3.0, sd["state"][0]["step"]
print("RESULT state=%s" % state_digest(optimizer), flush=True)


class Evil:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return open, (self.path, "w")  # unpickling creates the file


def pickled(path):
    buffer = io.BytesIO()
    torch.save({"state": {}, "param_groups": [Evil(path)]}, buffer)
    return buffer.getvalue()


# 2. A root that sends a torch.save pickle as the state, in the messages broadcast_optimizer_state uses.
if r == 0:
    payload = pickled(marker)
    pickle.loads(pickle.dumps(Evil(control)))  # the payload's trick is live: the control marker appears
    torch.load(io.BytesIO(pickled(control + ".torch")))  # and torch.load of this torch version runs it too
    assert os.path.exists(control) and os.path.exists(control + ".torch")
    xaf.broadcast_(torch.tensor([len(payload), 0], dtype=torch.int64), 0, name="optimizer_state.header")
    xaf.broadcast_(torch.frombuffer(bytearray(payload), dtype=torch.uint8), 0, name="optimizer_state.description")
else:
    try:
        xaf.broadcast_optimizer_state(optimizer, root_rank=0)
        print("UNEXPECTED the pickle was accepted", flush=True)
    except AgentError as e:
        print("REFUSED pickle:", e, flush=True)
    print("MARKER exists=%s" % os.path.exists(marker), flush=True)

# 3. A root that announces a description of 1 TiB: refused before anything is allocated or received.
if r == 0:
    xaf.broadcast_(torch.tensor([1 << 40, 0], dtype=torch.int64), 0, name="optimizer_state.header")
else:
    try:
        xaf.broadcast_optimizer_state(optimizer, root_rank=0)
        print("UNEXPECTED the length was accepted", flush=True)
    except AgentError as e:
        print("REFUSED length:", e, flush=True)
print("PASS rank", r, flush=True)
