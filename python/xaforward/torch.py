"""Horovod-style data parallelism over XAForward: `init()`, `allreduce_()`, `broadcast_parameters()`,
`DistributedOptimizer`. Each rank's training process talks to its own `xaf agent` (a Java process that joined the
job); tensors travel through a shared-memory segment the agent created, commands through its Unix socket.

Every rank must call the collectives in the same order with the same sizes (as with Horovod): the agent checks it
before each one and answers a mismatch with an error naming the ranks, rather than hanging.
"""

import atexit
import io
import os
import sys
import threading

import torch

from xaforward.agent import AgentClient, AgentError, OP_AVERAGE, OP_SUM

__all__ = ["init", "shutdown", "is_initialized", "rank", "size", "local_rank", "allreduce_", "allreduce",
           "broadcast_", "broadcast", "broadcast_parameters", "broadcast_optimizer_state", "barrier",
           "DistributedOptimizer", "Average", "Sum", "AgentError"]

Average = OP_AVERAGE
Sum = OP_SUM

_ALIGN = 64  # bytes: each reserved region starts on a cache line


class _State:
    def __init__(self, client, hello):
        self.client = client
        self.hello = hello
        self.shm = torch.from_file(hello.shm_path, shared=True, size=hello.shm_bytes // 4, dtype=torch.float32)
        self.shm_bytes = self.shm.view(torch.uint8)
        self.reserved = 0  # bytes at the start of the segment held by DistributedOptimizers
        self.lock = threading.Lock()  # serialises the synchronous helpers' use of the scratch region
        self.calls = 0
        self.failed = False


_state = None


def init():
    """Connects to this rank's agent (XAF_AGENT_SOCKET) and maps its shared segment. The agent's answer is
    authoritative; RANK, WORLD_SIZE and LOCAL_RANK, where set (torchrun, xaf launch), must agree with it."""
    global _state
    if _state is not None:
        return
    path = os.environ.get("XAF_AGENT_SOCKET")
    if not path:
        raise RuntimeError("XAF_AGENT_SOCKET is not set: start this script with `xaf launch --python` or "
                           "`xaf train --python`, or set it to the socket of this rank's `xaf agent`")
    client = AgentClient(path)
    try:
        hello = client.hello()
        for var, value in (("RANK", hello.rank), ("WORLD_SIZE", hello.size), ("LOCAL_RANK", hello.local_rank)):
            given = os.environ.get(var)
            if given is not None and given.strip() != "" and given.strip() != str(value):
                raise RuntimeError("%s=%s but the agent at %s serves rank %d of %d (local rank %d): the launcher "
                                   "paired this script with another rank's agent"
                                   % (var, given, path, hello.rank, hello.size, hello.local_rank))
        _state = _State(client, hello)
    except BaseException:
        client.close()
        raise
    _install_exit_hooks()


def _install_exit_hooks():
    previous = sys.excepthook

    def excepthook(kind, value, tb):
        # A script that dies of an exception leaves without bye: its agent leaves the job and the other ranks
        # fail naming this rank, rather than waiting at a final barrier this rank will never reach in step.
        if _state is not None:
            _state.failed = True
        previous(kind, value, tb)

    sys.excepthook = excepthook
    atexit.register(_shutdown_at_exit)


def _shutdown_at_exit():
    try:
        shutdown()
    except AgentError as e:
        # the job already failed (the script saw why); one line, not a traceback from the interpreter's exit
        print("xaforward: leaving without the final barrier: %s" % e, file=sys.stderr)


def shutdown():
    """Ends this rank's part of the job: a final barrier with every rank (bye), then the connection is closed.
    Called at exit; after an uncaught exception the connection is only closed."""
    global _state
    state, _state = _state, None
    if state is None:
        return
    try:
        if not state.failed:
            state.client.bye()
    finally:
        state.client.close()


def is_initialized():
    return _state is not None


def _get():
    if _state is None:
        raise RuntimeError("xaforward.torch.init() has not been called")
    return _state


def rank():
    return _get().hello.rank


def size():
    return _get().hello.size


def local_rank():
    return _get().hello.local_rank


def barrier():
    _get().client.barrier()


# -- staging: CUDA tensors go through pinned host buffers ---------------------------------------------------------

_pinned = {}


def _pinned_buffer(numel, dtype):
    key = (numel, dtype)
    buf = _pinned.get(key)
    if buf is None:
        buf = torch.empty(numel, dtype=dtype, pin_memory=True)
        _pinned[key] = buf
    return buf


def _to_host(t):
    """The tensor's values in host memory: itself on the CPU; on a GPU a pinned buffer filled by DMA and waited for
    (exercised only where a GPU exists; on CPU this is a no-op)."""
    if not t.is_cuda:
        return t
    buf = _pinned_buffer(t.numel(), t.dtype)
    buf.copy_(t.reshape(-1), non_blocking=True)
    torch.cuda.current_stream(t.device).synchronize()
    return buf.view(t.shape)


def _from_host(t, host):
    """Writes host values back into a GPU tensor through a pinned buffer and waits for the copy, so that the buffer
    (shared by every tensor of the same size) is free again on return. A no-op on CPU, where the values are in `t`
    already."""
    if not t.is_cuda:
        return
    buf = _pinned_buffer(t.numel(), t.dtype)
    if buf.data_ptr() != host.data_ptr():
        buf.copy_(host.reshape(-1))
    t.copy_(buf.view(t.shape), non_blocking=True)
    torch.cuda.current_stream(t.device).synchronize()


# -- synchronous collectives through the scratch region -----------------------------------------------------------

def _scratch(state):
    start = state.reserved
    words = (state.hello.shm_bytes - start) // 4
    if words <= 0:
        raise RuntimeError("the agent's shared segment (%d bytes) is taken whole by DistributedOptimizer buckets: "
                           "start the agent with a larger --shm-bytes" % state.hello.shm_bytes)
    return start, words


def _next_name(state, kind, name):
    state.calls += 1
    return name if name is not None else "%s.%d" % (kind, state.calls)


def allreduce_(tensor, op=Average, name=None):
    """All-reduces `tensor` in place over all ranks (op=Average or Sum) and returns it. Floating-point tensors
    only; they travel as float32 (float64 loses precision)."""
    if op not in (Average, Sum):
        raise ValueError("op must be xaforward.torch.Average or Sum, was %r" % (op,))
    if not tensor.is_floating_point():
        raise TypeError("allreduce_ takes floating-point tensors, was %s" % tensor.dtype)
    state = _get()
    name = _next_name(state, "allreduce", name)
    with torch.no_grad(), state.lock:
        host = _to_host(tensor)
        flat = host.reshape(-1)  # a view when contiguous, else a copy written back below
        start, words = _scratch(state)
        n = flat.numel()
        for i, first in enumerate(range(0, max(n, 1), words)):
            count = min(words, n - first)
            region = state.shm[start // 4:start // 4 + count]
            region.copy_(flat[first:first + count])
            state.client.wait(state.client.allreduce_async(start, count, op, "%s[%d]" % (name, i)))
            flat[first:first + count].copy_(region)
        if n > 0 and flat.data_ptr() != host.data_ptr():
            host.copy_(flat.view(host.shape))
        _from_host(tensor, host)
    return tensor


def allreduce(tensor, op=Average, name=None):
    """Returns the all-reduce of `tensor` over all ranks; `tensor` is left as it was."""
    return allreduce_(tensor.detach().clone(), op=op, name=name)


def broadcast_(tensor, root_rank, name=None):
    """Copies `tensor` of rank `root_rank` into `tensor` on every rank, bit for bit (any dtype), and returns it."""
    state = _get()
    if not 0 <= root_rank < state.hello.size:
        raise ValueError("root_rank %d is outside 0..%d" % (root_rank, state.hello.size - 1))
    name = _next_name(state, "broadcast", name)
    with torch.no_grad(), state.lock:
        host = _to_host(tensor).contiguous()
        raw = host.reshape(-1).view(torch.uint8) if host.numel() > 0 else torch.empty(0, dtype=torch.uint8)
        start, words = _scratch(state)
        total = raw.numel()
        step = words * 4
        for i, first in enumerate(range(0, max(total, 1), step)):
            n = min(step, total - first)
            padded = (n + 3) // 4 * 4
            region = state.shm_bytes[start:start + padded]
            if state.hello.rank == root_rank:
                region[:n].copy_(raw[first:first + n])
            state.client.wait(state.client.broadcast_async(start, padded // 4, root_rank, "%s[%d]" % (name, i)))
            if state.hello.rank != root_rank:
                raw[first:first + n].copy_(region[:n])
        if tensor.is_cuda:
            _from_host(tensor, host)
        elif host.data_ptr() != tensor.data_ptr():
            tensor.copy_(host)
    return tensor


def broadcast(tensor, root_rank, name=None):
    return broadcast_(tensor.detach().clone(), root_rank, name=name)


def broadcast_parameters(params, root_rank=0):
    """Makes every rank's parameters those of `root_rank`: `params` is a state_dict (model.state_dict(), in place)
    or an iterable of (name, tensor) such as model.named_parameters(). Sorted by name, so every rank walks the same
    list."""
    items = sorted(params.items()) if hasattr(params, "items") else sorted(params, key=lambda kv: kv[0])
    for name, tensor in items:
        if tensor is None:
            continue
        if not torch.is_tensor(tensor):
            raise TypeError("broadcast_parameters: %s is a %s, not a tensor" % (name, type(tensor).__name__))
        broadcast_(tensor.data if isinstance(tensor, torch.nn.Parameter) else tensor, root_rank,
                   name="param:" + name)


def broadcast_optimizer_state(optimizer, root_rank=0):
    """Makes every rank's optimizer state (moments, step counts, learning rates) that of `root_rank`. The root's
    state_dict is serialized with torch.save and broadcast as bytes, so ranks whose state is still empty (a fresh
    optimizer) receive it whole."""
    state = _get()
    payload = torch.zeros(2, dtype=torch.int64)
    data = None
    if state.hello.rank == root_rank:
        buffer = io.BytesIO()
        torch.save(optimizer.state_dict(), buffer)
        data = buffer.getvalue()
        payload[0] = len(data)
    broadcast_(payload, root_rank, name="optimizer_state.length")
    length = int(payload[0])
    blob = torch.zeros(length, dtype=torch.uint8)
    if data is not None:
        blob.copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8))
    broadcast_(blob, root_rank, name="optimizer_state")
    if state.hello.rank != root_rank:
        optimizer.load_state_dict(torch.load(io.BytesIO(blob.numpy().tobytes())))


# -- DistributedOptimizer ---------------------------------------------------------------------------------------------

class _Bucket:
    __slots__ = ("index", "params", "offset", "count", "ready", "request", "name")

    def __init__(self, index, offset):
        self.index = index
        self.params = []
        self.offset = offset
        self.count = 0
        self.ready = 0
        self.request = None
        self.name = ""


class _DistributedMixin:
    """Mixed into the wrapped optimizer's class (so LR schedulers and isinstance checks still see an Optimizer).
    Gradient hooks copy each parameter's gradient into its bucket in the shared segment as backward produces it
    and start the bucket's all-reduce once the bucket is full; step() waits for every bucket, copies the averages
    back into .grad and steps."""

    def _xaf_setup(self, named_parameters, backward_passes_per_step, op, bucket_bytes):
        state = _get()
        if backward_passes_per_step < 1:
            raise ValueError("backward_passes_per_step must be at least 1, was %d" % backward_passes_per_step)
        if op not in (Average, Sum):
            raise ValueError("op must be Average or Sum, was %r" % (op,))
        self._xaf_op = op
        self._xaf_passes = backward_passes_per_step
        names = {}
        if named_parameters is not None:
            for name, p in named_parameters:
                if p in names:
                    continue
                names[p] = name
        params = [p for group in self.param_groups for p in group["params"] if p.requires_grad]
        seen = set()
        unique = []
        for p in params:
            if id(p) not in seen:
                seen.add(id(p))
                unique.append(p)
        if named_parameters is not None:
            missing = [i for i, p in enumerate(unique) if p not in names]
            if missing:
                raise ValueError("named_parameters does not name %d of the optimizer's parameters (positions %s)"
                                 % (len(missing), missing[:5]))
        # Backward produces gradients roughly from the last layer to the first: buckets follow that order, so the
        # first bucket fills (and its all-reduce starts) while the rest of backward still runs.
        order = list(reversed(unique))
        buckets = []
        offset = state.reserved
        current = None
        for p in order:
            if p.dtype not in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
                raise TypeError("DistributedOptimizer: parameter %s is %s; gradients travel as float32"
                                % (names.get(p, "?"), p.dtype))
            if current is None or (current.count > 0 and (current.count + p.numel()) * 4 > bucket_bytes):
                if current is not None:
                    offset = _align(current.offset + current.count * 4)
                current = _Bucket(len(buckets), offset)
                buckets.append(current)
            current.params.append(p)
            current.count += p.numel()
        end = _align(current.offset + current.count * 4) if current is not None else offset
        if end > state.hello.shm_bytes:
            raise RuntimeError("the model's gradients need %d bytes of the agent's shared segment (from byte %d), it "
                               "has %d: start the agent with --shm-bytes of at least %d"
                               % (end - state.reserved, state.reserved, state.hello.shm_bytes, end + (1 << 20)))
        state.reserved = end
        self._xaf_buckets = buckets
        self._xaf_slot = {}
        self._xaf_bucket_of = {}
        for b in buckets:
            first = b.offset // 4
            for p in b.params:
                self._xaf_slot[p] = state.shm[first:first + p.numel()]
                self._xaf_bucket_of[p] = b
                first += p.numel()
            b.name = "grad.bucket%d[%s..%s]" % (b.index, names.get(b.params[0], "?"), names.get(b.params[-1], "?"))
        self._xaf_names = names
        self._xaf_passes_left = {p: backward_passes_per_step for p in unique}
        self._xaf_lock = threading.Lock()
        self._xaf_synced = False
        self._xaf_accumulators = []
        with torch.enable_grad():
            for p in unique:
                # the parameter's gradient accumulator: its hook runs once .grad holds this pass's gradient
                accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
                accumulator.register_hook(self._xaf_hook(p))
                self._xaf_accumulators.append(accumulator)  # the hook lives as long as its node

    def _xaf_hook(self, p):
        def hook(*ignored):
            with self._xaf_lock:
                self._xaf_synced = False
                left = self._xaf_passes_left[p]
                if left == 0:
                    raise RuntimeError("gradient of %s computed more than backward_passes_per_step=%d times before "
                                       "step(): call step() (or synchronize()) after each group of backward passes"
                                       % (self._xaf_names.get(p, "a parameter"), self._xaf_passes))
                self._xaf_passes_left[p] = left - 1
                if left == 1:
                    self._xaf_fill(p)
                    bucket = self._xaf_bucket_of[p]
                    bucket.ready += 1
                    if bucket.ready == len(bucket.params):
                        self._xaf_start(bucket)
        return hook

    def _xaf_fill(self, p):
        slot = self._xaf_slot[p]
        if p.grad is None:
            slot.zero_()
        else:
            slot.copy_(_to_host(p.grad.detach()).reshape(-1))

    def _xaf_start(self, bucket):
        state = _get()
        bucket.request = state.client.allreduce_async(bucket.offset, bucket.count, self._xaf_op, bucket.name)

    def synchronize(self):
        """Waits for every bucket's all-reduce (starting those whose parameters got no gradient this step, with
        zeros for them) and writes the results into .grad."""
        state = _get()
        with self._xaf_lock:
            for bucket in self._xaf_buckets:
                if bucket.request is None:
                    for p in bucket.params:
                        if self._xaf_passes_left[p] > 0:
                            self._xaf_fill(p)
                    self._xaf_start(bucket)
            buckets = list(self._xaf_buckets)
        with torch.no_grad():
            for bucket in buckets:
                state.client.wait(bucket.request)
                bucket.request = None
                bucket.ready = 0
                for p in bucket.params:
                    slot = self._xaf_slot[p].view(p.shape)
                    if p.grad is None:
                        p.grad = slot.to(device=p.device, dtype=p.dtype).clone()
                    elif p.grad.is_cuda:
                        _from_host(p.grad, slot)  # through a pinned buffer of the gradient's dtype
                    else:
                        p.grad.copy_(slot)
        for p in self._xaf_passes_left:
            self._xaf_passes_left[p] = self._xaf_passes
        self._xaf_synced = True

    def step(self, closure=None):
        # A caller may synchronize() first (to clip or inspect the averaged gradients); step() does not reduce twice.
        if not self._xaf_synced:
            self.synchronize()
        self._xaf_synced = False
        return super().step(closure)


def _align(n):
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def DistributedOptimizer(optimizer, named_parameters=None, backward_passes_per_step=1, op=Average,
                         bucket_bytes=4 << 20):
    """Wraps `optimizer` so that its step() uses gradients averaged (op=Average, or summed: Sum) over all ranks.
    The result is an instance of the optimizer's own class (sharing its state), with gradient hooks that start each
    bucket's all-reduce (`bucket_bytes` of float32 each) while backward still runs. With
    backward_passes_per_step=N, gradients of N backward passes accumulate locally (summed, as .grad does) before
    one all-reduce."""
    _get()
    base = optimizer.__class__
    cls = type(base.__name__, (_DistributedMixin, base), {"__module__": __name__})
    wrapped = cls.__new__(cls)
    wrapped.__dict__.update(optimizer.__dict__)
    wrapped._xaf_setup(list(named_parameters) if named_parameters is not None else None,
                       backward_passes_per_step, op, bucket_bytes)
    return wrapped
