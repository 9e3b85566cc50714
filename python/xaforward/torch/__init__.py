"""Horovod-style data parallelism over XAForward: `init()`, `allreduce_()`, `broadcast_parameters()`,
`DistributedOptimizer`. Each rank's training process talks to its own `xaf agent` (a Java process that joined the
job); tensors travel through a shared-memory segment the agent created, commands through its Unix socket.

Collectives are matched by their order, as in torch.distributed (not by name, as in Horovod): every rank must call
them in the same order with the same sizes. The agent checks it before each one and answers a mismatch with an
error naming the ranks, rather than hanging.
"""

import atexit
import os
import sys
import threading

import torch

from xaforward.agent import AgentClient, AgentError, OP_AVERAGE, OP_SUM, open_segment

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
        fd = open_segment(hello.shm_path, hello.shm_bytes)
        try:
            # through the descriptor just checked: a path swapped after the check is never mapped
            self.shm = torch.from_file("/proc/self/fd/%d" % fd, shared=True, size=hello.shm_bytes // 4,
                                       dtype=torch.float32)
        finally:
            os.close(fd)  # the mapping stays
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


def _through_scratch(state, nbytes, name, fill, send, drain):
    """The chunking loop of the synchronous collectives: `nbytes` bytes in pieces that fit the scratch region, one
    request each, waited for before the next. fill(offset, first, n) writes bytes first..first+n into the segment at
    offset, send(offset, words, piece_name) sends the request for ceil(n/4) words, drain(offset, first, n) reads the
    result back. An empty tensor still sends one empty request, so every rank issues the same requests."""
    start, words = _scratch(state)
    step = words * 4
    for i, first in enumerate(range(0, max(nbytes, 1), step)):
        n = min(step, nbytes - first)
        fill(start, first, n)
        state.client.wait(send(start, (n + 3) // 4, "%s[%d]" % (name, i)))
        drain(start, first, n)


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
        n = flat.numel()

        def fill(offset, first, nbytes):
            state.shm[offset // 4:(offset + nbytes) // 4].copy_(flat[first // 4:(first + nbytes) // 4])

        def drain(offset, first, nbytes):
            flat[first // 4:(first + nbytes) // 4].copy_(state.shm[offset // 4:(offset + nbytes) // 4])

        _through_scratch(state, n * 4, name, fill,
                         lambda offset, words, piece: state.client.allreduce_async(offset, words, op, piece), drain)
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
        me = state.hello.rank

        def fill(offset, first, nbytes):
            if me == root_rank:
                state.shm_bytes[offset:offset + nbytes].copy_(raw[first:first + nbytes])

        def drain(offset, first, nbytes):
            if me != root_rank:
                raw[first:first + nbytes].copy_(state.shm_bytes[offset:offset + nbytes])

        _through_scratch(state, raw.numel(), name, fill,
                         lambda offset, words, piece: state.client.broadcast_async(offset, words, root_rank, piece),
                         drain)
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


# The optimizer state travels as a JSON description plus raw tensor bytes, never as a pickle: unpickling what another
# rank sent would run whatever code that rank (or anyone able to forge its broadcast) chose. The description holds
# plain values (None, bool, int, float, str), lists, tuples, dicts and references to tensors; the decoder accepts
# nothing else.
_STATE_DTYPES = {str(d).replace("torch.", ""): d for d in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.complex64, torch.complex128,
    torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool)}
MAX_STATE_DESCRIPTION = 16 << 20  # bytes of JSON: far beyond any optimizer's hyperparameters
_STATE_SLACK = 64 << 20  # bytes of tensors allowed beyond the bound derived from the parameters


def _encode_state(value, tensors):
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return value
    if torch.is_tensor(value):
        t = value.detach().to("cpu").contiguous()
        if t.dtype not in _STATE_DTYPES.values():
            raise TypeError("broadcast_optimizer_state: a state tensor is %s, which does not travel" % t.dtype)
        tensors.append(t)
        return {"tensor": len(tensors) - 1, "dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape)}
    if isinstance(value, tuple):
        return {"tuple": [_encode_state(v, tensors) for v in value]}
    if isinstance(value, list):
        return [_encode_state(v, tensors) for v in value]
    if isinstance(value, dict):
        for k in value:
            if not isinstance(k, (int, str)) or isinstance(k, bool):
                raise TypeError("broadcast_optimizer_state: a state key is a %s; keys travel as int or str"
                                % type(k).__name__)
        return {"dict": [[k, _encode_state(v, tensors)] for k, v in value.items()]}
    raise TypeError("broadcast_optimizer_state: the state holds a %s, which does not travel (plain values, lists, "
                    "tuples, dicts and tensors do)" % type(value).__name__)


class _StateDecoder:
    """Rebuilds the state from its description and the tensor bytes, checking every field: a description that is
    not exactly what `_encode_state` writes is refused."""

    def __init__(self, blob_bytes):
        self.blob_bytes = blob_bytes
        self.layout = []  # (dtype, shape, first byte, bytes), in tensor order

    def refuse(self, why):
        raise AgentError("broadcast_optimizer_state: the root rank sent a state this rank refuses: %s" % why)

    def value(self, v, depth=0):
        if depth > 32:
            self.refuse("nested deeper than 32 levels")
        if v is None or isinstance(v, (bool, str, int, float)):
            return v
        if isinstance(v, list):
            return [self.value(x, depth + 1) for x in v]
        if not isinstance(v, dict) or len(v) == 0:
            self.refuse("an entry of type %s" % type(v).__name__)
        if set(v) == {"tuple"} and isinstance(v["tuple"], list):
            return tuple(self.value(x, depth + 1) for x in v["tuple"])
        if set(v) == {"dict"} and isinstance(v["dict"], list):
            out = {}
            for pair in v["dict"]:
                if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], (int, str))
                        and not isinstance(pair[0], bool)):
                    self.refuse("a dict entry that is not a [key, value] pair")
                out[pair[0]] = self.value(pair[1], depth + 1)
            return out
        if set(v) == {"tensor", "dtype", "shape"}:
            return self.tensor(v)
        self.refuse("an entry with fields %s" % sorted(v)[:5])

    def tensor(self, v):
        index, dtype, shape = v["tensor"], _STATE_DTYPES.get(v["dtype"]), v["shape"]
        if index != len(self.layout) or isinstance(index, bool):
            self.refuse("tensor %r out of order" % (index,))
        if dtype is None:
            self.refuse("tensor dtype %r" % (v["dtype"],))
        if not isinstance(shape, list) or len(shape) > 32 or not all(
                isinstance(d, int) and not isinstance(d, bool) and 0 <= d < (1 << 40) for d in shape):
            self.refuse("tensor shape %r" % (shape,))
        numel = 1
        for d in shape:
            numel *= d
        nbytes = numel * torch.empty((), dtype=dtype).element_size()
        first = self.layout[-1][2] + self.layout[-1][3] if self.layout else 0
        if first + nbytes > self.blob_bytes:
            self.refuse("its tensors need more than the %d bytes announced" % self.blob_bytes)
        self.layout.append((dtype, shape, first, nbytes))
        return _TensorSlot(index)  # replaced by the tensor once the bytes are in

    def total(self):
        return self.layout[-1][2] + self.layout[-1][3] if self.layout else 0


class _TensorSlot:
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


def _fill_tensors(value, tensors):
    if isinstance(value, _TensorSlot):
        return tensors[value.index]
    if isinstance(value, list):
        return [_fill_tensors(v, tensors) for v in value]
    if isinstance(value, tuple):
        return tuple(_fill_tensors(v, tensors) for v in value)
    if isinstance(value, dict):
        return {k: _fill_tensors(v, tensors) for k, v in value.items()}
    return value


def broadcast_optimizer_state(optimizer, root_rank=0):
    """Makes every rank's optimizer state (moments, step counts, learning rates) that of `root_rank`, so ranks whose
    state is still empty (a fresh optimizer) receive it whole. The state travels as a JSON description and raw tensor
    bytes, not as a pickle; each rank bounds and checks what it receives before it allocates or loads anything, and
    refuses (AgentError) anything but plain values, tuples, lists, dicts and tensors."""
    import json

    state = _get()
    header = torch.zeros(2, dtype=torch.int64)  # description bytes, tensor bytes
    description = tensors = None
    if state.hello.rank == root_rank:
        tensors = []
        description = json.dumps(_encode_state(optimizer.state_dict(), tensors), allow_nan=True).encode("utf-8")
        header[0], header[1] = len(description), sum(t.numel() * t.element_size() for t in tensors)
    broadcast_(header, root_rank, name="optimizer_state.header")
    description_bytes, tensor_bytes = int(header[0]), int(header[1])
    # The receivers' bound on tensor bytes comes from their own parameters: no optimizer keeps more than a few
    # float64 values per parameter element.
    elements = sum(p.numel() for group in optimizer.param_groups for p in group["params"])
    tensor_limit = 32 * elements + _STATE_SLACK
    if not 0 <= description_bytes <= MAX_STATE_DESCRIPTION or not 0 <= tensor_bytes <= tensor_limit:
        raise AgentError("broadcast_optimizer_state: the root rank announced %d bytes of description and %d of "
                         "tensors; this rank takes at most %d and %d (32 bytes per parameter element plus %d): "
                         "refused" % (description_bytes, tensor_bytes, MAX_STATE_DESCRIPTION, tensor_limit,
                                      _STATE_SLACK))
    text = torch.zeros(description_bytes, dtype=torch.uint8)
    if description is not None:
        text.copy_(torch.frombuffer(bytearray(description), dtype=torch.uint8))
    broadcast_(text, root_rank, name="optimizer_state.description")
    blob = torch.zeros(tensor_bytes, dtype=torch.uint8)
    if state.hello.rank == root_rank:
        first = 0
        for t in tensors:
            n = t.numel() * t.element_size()
            if n:
                blob[first:first + n].copy_(t.reshape(-1).view(torch.uint8))
            first += n
    if state.hello.rank != root_rank:
        decoder = _StateDecoder(tensor_bytes)
        try:
            parsed = json.loads(text.numpy().tobytes().decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise AgentError("broadcast_optimizer_state: the root rank sent a description that is not JSON (%s): "
                             "refused, nothing was loaded" % e) from None
        template = decoder.value(parsed)
        if decoder.total() != tensor_bytes:
            decoder.refuse("%d tensor bytes announced, %d described" % (tensor_bytes, decoder.total()))
        if not (isinstance(template, dict) and set(template) == {"state", "param_groups"}):
            decoder.refuse("it is not an optimizer state_dict (state, param_groups)")
    broadcast_(blob, root_rank, name="optimizer_state.tensors")
    if state.hello.rank != root_rank:
        received = [blob[first:first + n].clone().view(dtype).reshape(shape) if n else
                    torch.zeros(shape, dtype=dtype) for dtype, shape, first, n in decoder.layout]
        optimizer.load_state_dict(_fill_tensors(template, received))


# -- DistributedOptimizer ---------------------------------------------------------------------------------------------

class _Bucket:
    __slots__ = ("index", "params", "offset", "count", "ready", "request", "name", "staging", "staged", "stream")

    def __init__(self, index, offset):
        self.index = index
        self.params = []
        self.offset = offset
        self.count = 0
        self.ready = 0
        self.request = None
        self.name = ""
        self.staging = None  # pinned float32 copy of the bucket, for gradients on a GPU
        self.staged = []  # parameters whose GPU gradient is being copied into staging
        self.stream = None  # the CUDA stream those copies were queued on


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
        self._xaf_place = {}  # parameter -> its first float within its bucket
        for b in buckets:
            first = b.offset // 4
            for p in b.params:
                self._xaf_slot[p] = state.shm[first:first + p.numel()]
                self._xaf_bucket_of[p] = b
                self._xaf_place[p] = first - b.offset // 4
                first += p.numel()
            b.name = "grad.bucket%d[%s..%s]" % (b.index, names.get(b.params[0], "?"), names.get(b.params[-1], "?"))
        self._xaf_names = names
        self._xaf_passes_left = {p: backward_passes_per_step for p in unique}
        self._xaf_lock = threading.Lock()
        self._xaf_synced = False
        self._xaf_accumulators = []
        self._xaf_handles = []
        with torch.enable_grad():
            for p in unique:
                if hasattr(p, "register_post_accumulate_grad_hook"):  # torch 2.1 and later
                    self._xaf_handles.append(p.register_post_accumulate_grad_hook(self._xaf_hook(p)))
                    continue
                # Older torch: a hook on the parameter's gradient accumulator, reached through the graph of a
                # no-op expand; it runs once .grad holds this pass's gradient.
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
        elif p.grad.is_cuda:
            # Queued on the GPU into the bucket's pinned staging buffer; the bucket waits for all of its copies at
            # once before it starts (one stream synchronize per bucket, not per parameter).
            bucket = self._xaf_bucket_of[p]
            if bucket.staging is None:
                bucket.staging = torch.empty(bucket.count, dtype=torch.float32, pin_memory=True)
            first = self._xaf_place[p]
            bucket.staging[first:first + p.numel()].copy_(p.grad.detach().reshape(-1), non_blocking=True)
            bucket.staged.append(p)
            bucket.stream = torch.cuda.current_stream(p.grad.device)
        else:
            slot.copy_(p.grad.detach().reshape(-1))

    def _xaf_start(self, bucket):
        if bucket.staged:
            bucket.stream.synchronize()
            for p in bucket.staged:
                first = self._xaf_place[p]
                self._xaf_slot[p].copy_(bucket.staging[first:first + p.numel()])
            bucket.staged = []
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
                on_gpu = None
                for p in bucket.params:
                    slot = self._xaf_slot[p].view(p.shape)
                    if p.grad is not None and p.grad.is_cuda:
                        # through the bucket's pinned staging buffer, waited for once per bucket below
                        if bucket.staging is None:
                            bucket.staging = torch.empty(bucket.count, dtype=torch.float32, pin_memory=True)
                        first = self._xaf_place[p]
                        staged = bucket.staging[first:first + p.numel()]
                        staged.copy_(slot.reshape(-1))
                        p.grad.copy_(staged.view(p.shape), non_blocking=True)
                        on_gpu = p.grad.device
                    elif p.grad is None:
                        p.grad = slot.to(device=p.device, dtype=p.dtype).clone()
                    else:
                        p.grad.copy_(slot)
                if on_gpu is not None:
                    torch.cuda.current_stream(on_gpu).synchronize()  # staging is reused by the next step
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
