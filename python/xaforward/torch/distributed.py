"""The torch.distributed backend "xaf": collectives of an unmodified torch.distributed or DistributedDataParallel
script go through this rank's `xaf agent`, and so through XAForward's transport and gateways::

    import xaforward.torch.distributed            # registers the backend "xaf"
    torch.distributed.init_process_group(backend="xaf")

The process group speaks the agent protocol that `xaforward.torch` speaks (docs/PYTORCH.md, "Protocol"): each
collective is cut into pieces that fit a ring in the agent's shared segment, the pieces are sent at once, and a
completion thread copies each result out as the agent answers, in order, and completes the operation's future. So
DistributedDataParallel's buckets overlap backward, as they do with Gloo.

What the agent has (all-reduce of floats with sum or average, byte-exact broadcast, barrier) is used directly;
allgather is one broadcast per rank; min, max, product, the bitwise ops, integer and float64 reductions are an
allgather followed by the same local reduction on every rank (exact, and world-size times the traffic);
reduce_scatter is an all-reduce of which each rank keeps its part. Point-to-point and the remaining collectives
raise NotImplementedError naming the call.

Rendezvous: under `xaf train --python` or `xaf launch --python` (XAF_AGENT_SOCKET set, MASTER_ADDR not set), the
env:// rendezvous that init_process_group uses by default needs no TCP store: ranks in data centers that reach each
other only through XAF gateways have no address in common. Rank and world size come from the agent. `xaf://` names
that rendezvous explicitly. With MASTER_ADDR set (torchrun), env:// is torch's own and only the collectives go
through the agent.
"""

import collections
import importlib
import os
import queue
import threading

import torch
import torch.distributed as dist

import xaforward.torch as _xaf
from xaforward.agent import AgentError, OP_AVERAGE, OP_SUM

__all__ = ["BACKEND", "ProcessGroupXaf", "AgentStore", "bf16_hook"]

BACKEND = "xaf"

_ALIGN = 64
_FLOAT_TYPES = (torch.float32, torch.float16, torch.bfloat16)  # reduced by the agent, as float32
_RedOp = getattr(dist.ReduceOp, "RedOpType", dist.ReduceOp)  # torch >= 1.13 wraps the enum in a class
_OP_NAMES = {getattr(_RedOp, n): n.lower() for n in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR",
                                                      "PREMUL_SUM") if hasattr(_RedOp, n)}
# Works handed to torch stay referenced this long after they completed: see ProcessGroupXaf._keep.
_KEEP_COMPLETED = 256


def _op_of(opts):
    """The RedOpType of AllreduceOptions, ReduceOptions, ReduceScatterOptions or a bare ReduceOp (None: SUM)."""
    op = getattr(opts, "reduceOp", opts)
    if op is None:
        return _RedOp.SUM
    return getattr(op, "op", op)


def _options(opts, kind):
    return opts if opts is not None and not isinstance(opts, (dist.ReduceOp, _RedOp)) else kind()


def _unsupported(call, why):
    raise NotImplementedError("torch.distributed backend 'xaf' does not support %s: %s" % (call, why))


# -- the ring: requests' bytes in the shared segment ------------------------------------------------------------------

class _Ring:
    """Byte ranges of the shared segment for requests in flight. The agent answers requests in the order they
    arrived, so ranges are freed oldest first and a ring is all the bookkeeping needed."""

    def __init__(self, start, end):
        self.start, self.end = start, end
        self.live = collections.deque()  # (offset, bytes), oldest first
        self.cond = threading.Condition()
        self.failed = None

    def piece_bytes(self):
        # a quarter of the ring: a large tensor goes as several pieces in flight at once
        return max(_ALIGN, (self.end - self.start) // 4 // _ALIGN * _ALIGN)

    def take(self, nbytes):
        need = _align(max(nbytes, 4))
        with self.cond:
            while True:
                if self.failed is not None:
                    raise AgentError(self.failed)
                offset = self._fit(need)
                if offset is not None:
                    self.live.append((offset, need))
                    return offset
                self.cond.wait()

    def _fit(self, need):
        if not self.live:
            return self.start if need <= self.end - self.start else None
        head = self.live[-1][0] + self.live[-1][1]
        tail = self.live[0][0]
        if head > tail:  # used: [tail, head); free: [head, end) and [start, tail)
            if self.end - head >= need:
                return head
            return self.start if tail - self.start >= need else None
        return head if tail - head >= need else None  # wrapped: free is [head, tail)

    def release(self, offset):
        with self.cond:
            first = self.live.popleft()
            assert first[0] == offset, "pieces are released in the order they were taken"
            self.cond.notify_all()


def _align(n):
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


# -- futures and works ------------------------------------------------------------------------------------------------

class _Work(dist.Work):
    """A collective in flight. wait() raises the agent's error (a Work made by torch's _create_work_from_future
    returns normally from wait() on a failed future in torch 1.13, which would hide a failed all-reduce)."""

    def __init__(self, future):
        super().__init__()
        self._future = future

    def wait(self, timeout=None):
        self._future.wait()  # raises the operation's error
        return True

    def get_future(self):
        return self._future

    def is_completed(self):
        return self._future.done()

    def is_success(self):
        if not self._future.done():
            return False
        try:
            self._future.value()
            return True
        except Exception:
            return False

    def synchronize(self):
        pass  # results are written into the tensors before the future completes


class _Operation:
    """One collective: its pieces (requests), and what is done once the last piece's result is in."""

    def __init__(self, name, result, finish=None):
        self.name = name
        self.result = result  # the tensors the future completes with
        self.finish = finish  # runs after the last piece: copy-backs, local reductions
        self.future = torch.futures.Future()
        self.pieces_left = 0
        self.error = None


class ProcessGroupXaf(dist.ProcessGroup):
    """The process group of backend "xaf": the whole job, as this rank's agent serves it."""

    def __init__(self, rank, size):
        super().__init__(rank, size)
        state = _xaf._get()
        self._state = state
        self._client = state.client
        # The ring takes half of the segment's free part; the other half stays for xaforward.torch's own helpers
        # (broadcast_parameters, allreduce_), which a script may still call.
        free = state.hello.shm_bytes - state.reserved
        start = _align(state.reserved)
        end = start + (free // 2) // _ALIGN * _ALIGN
        if end - start < 4 * _ALIGN:
            raise RuntimeError("the agent's shared segment has %d bytes free, too few for backend 'xaf': start the "
                               "agent with a larger --shm-bytes" % free)
        state.reserved = end
        self._ring = _Ring(start, end)
        self._submit_lock = threading.Lock()  # pieces are sent in the order their ranges were taken
        self._pending = collections.deque()  # (request id, offset, drain, operation), oldest first
        self._pending_cond = threading.Condition()
        self._calls = 0
        self._works = {}  # id -> work, while its operation runs
        self._completed = collections.deque(maxlen=_KEEP_COMPLETED)
        self._finished = queue.SimpleQueue()  # operations whose pieces are all in, for the finishing thread
        for target, name in ((self._complete, "xaf-pg-completion"), (self._finish_all, "xaf-pg-finish")):
            threading.Thread(target=target, name=name, daemon=True).start()

    def getBackendName(self):
        return BACKEND

    def _get_backend_name(self):
        return BACKEND

    def __repr__(self):
        return "ProcessGroupXaf(rank=%d, size=%d)" % (self.rank(), self.size())

    # -- plumbing -----------------------------------------------------------------------------------------------

    def _name(self, kind):
        self._calls += 1
        return "xaf-pg.%s#%d" % (kind, self._calls)

    def _start(self, op, pieces):
        """Sends `pieces` (bytes, fill, request, drain): fill(offset) writes the piece's input into the segment,
        request(offset, index) sends it and returns the request id, drain(offset) reads its result. Returns the
        operation's Work. Called under the submit lock: every rank sends its pieces in the order of its calls."""
        work = _Work(op.future)
        self._keep(work, op)
        op.pieces_left = len(pieces)
        if not pieces:
            self._finished.put(op)
            return work
        for index, (nbytes, fill, request, drain) in enumerate(pieces):
            offset = self._ring.take(nbytes) if nbytes is not None else None
            try:
                if fill is not None:
                    fill(offset)
                rid = request(offset, index)
            except BaseException as e:
                if offset is not None:
                    self._ring.release(offset)
                # The pieces already sent complete (or fail) on their own; this operation fails with this error.
                with self._pending_cond:
                    op.error = op.error or e
                    op.pieces_left -= len(pieces) - index
                    done = op.pieces_left == 0
                if done:
                    self._finished.put(op)
                raise
            with self._pending_cond:
                self._pending.append((rid, offset, drain, op))
                self._pending_cond.notify()
        return work

    def _keep(self, work, op):
        # A work torch's C++ code holds (DistributedDataParallel's reducer, _broadcast_coalesced) lives only as long
        # as its Python object: pybind11 forgets the Python override when the object is collected, and the C++
        # base class's wait() would then wait forever. The group keeps each work while it runs, and the last
        # _KEEP_COMPLETED completed ones, long after any caller in torch waits on them.
        self._works[id(op)] = work

    def _complete(self):
        """The completion thread: takes the replies in the order the requests went, copies each piece's result out
        of the segment and frees its range; an operation whose last piece is in goes to the finishing thread."""
        while True:
            with self._pending_cond:
                while not self._pending:
                    self._pending_cond.wait()
                rid, offset, drain, op = self._pending[0]
            error = None
            try:
                self._client.wait(rid)
                if op.error is None and drain is not None:
                    drain(offset)
            except BaseException as e:
                error = e
            if offset is not None:
                self._ring.release(offset)
            with self._pending_cond:
                self._pending.popleft()
                op.error = op.error or error
                op.pieces_left -= 1
                done = op.pieces_left == 0
            if done:
                self._finished.put(op)

    def _finish_all(self):
        """The finishing thread: completes operations in order. Apart from the completion thread, because a
        future's callbacks (a DDP communication hook's) may start the next collective, which may wait for ring
        space that only the completion thread frees."""
        while True:
            self._finish(self._finished.get())

    def _finish(self, op):
        if op.error is None and op.finish is not None:
            try:
                with torch.no_grad():
                    op.finish()
            except BaseException as e:
                op.error = e
        work = self._works.pop(id(op), None)
        if work is not None:
            self._completed.append(work)
        if op.error is not None:
            error = op.error
            if not isinstance(error, Exception):
                error = RuntimeError(str(error))
            op.future.set_exception(error)
        else:
            op.future.set_result(op.result)

    # -- the pieces of each kind of request ---------------------------------------------------------------------

    def _allreduce_pieces(self, flat, agent_op, name):
        """Pieces of an all-reduce of `flat` (1-D, floating point; float32 in the segment) in place."""
        shm = self._state.shm
        words = self._ring.piece_bytes() // 4
        pieces = []
        for first in range(0, max(flat.numel(), 1), words):
            count = min(words, flat.numel() - first)
            if count <= 0:
                break
            part = flat[first:first + count]
            pieces.append((count * 4,
                           lambda off, part=part: shm[off // 4:off // 4 + part.numel()].copy_(part),
                           lambda off, i, count=count: self._client.allreduce_async(off, count, agent_op,
                                                                                    "%s[%d]" % (name, i)),
                           lambda off, part=part: part.copy_(shm[off // 4:off // 4 + part.numel()])))
        return pieces

    def _broadcast_pieces(self, source, target, root, name):
        """Pieces of a broadcast: the root's bytes of `source` (1-D uint8) land in `target` (1-D uint8, the same
        length) on every rank; `source` is read on the root only."""
        raw = self._state.shm_bytes
        step = self._ring.piece_bytes()
        me = self.rank()
        pieces = []
        for first in range(0, target.numel(), step):
            n = min(step, target.numel() - first)
            src = source[first:first + n] if me == root else None
            dst = target[first:first + n]
            pieces.append((n,
                           (lambda off, src=src: raw[off:off + src.numel()].copy_(src)) if me == root else None,
                           lambda off, i, n=n: self._client.broadcast_async(off, (n + 3) // 4, root,
                                                                            "%s[%d]" % (name, i)),
                           lambda off, dst=dst: dst.copy_(raw[off:off + dst.numel()])))
        return pieces

    def _allgather_pieces(self, flat_input, flat_outputs, name):
        """One broadcast per rank: rank r's bytes of `flat_input` land in flat_outputs[r] everywhere."""
        source = _bytes(flat_input)
        pieces = []
        for r, out in enumerate(flat_outputs):
            pieces += self._broadcast_pieces(source, _bytes(out), r, "%s.from%d" % (name, r))
        return pieces

    # -- collectives ----------------------------------------------------------------------------------------------

    def allreduce(self, tensors, opts=None):
        tensor = _one(tensors, "allreduce")
        op = _op_of(opts)
        with self._submit_lock, torch.no_grad():
            name = self._name("allreduce")
            return self._reduce_into(tensor, op, name, keep=True, result=[tensor])

    def _reduce_into(self, tensor, op, name, keep, result):
        """All-reduces `tensor`; writes the result into it when `keep` (not on reduce()'s other ranks)."""
        agent_op = _agent_op(op, tensor.dtype)
        flat, writeback = _flat(tensor)
        if not keep:
            flat, writeback = flat.clone(), None
        if agent_op is not None:
            operation = _Operation(name, result, writeback)
            return self._start(operation, self._allreduce_pieces(flat, agent_op, name))
        # Everyone gathers everyone's tensor and reduces it the same way, in rank order: identical results.
        gathered = torch.empty((self.size(), flat.numel()), dtype=flat.dtype, device=flat.device)

        def reduce_locally():
            flat.copy_(_local_reduce(gathered, op, name))
            if writeback is not None:
                writeback()

        operation = _Operation(name, result, reduce_locally)
        return self._start(operation, self._allgather_pieces(flat, list(gathered), name))

    def broadcast(self, tensors, opts=None):
        tensor = _one(tensors, "broadcast")
        opts = _options(opts, dist.BroadcastOptions)
        root = opts.rootRank
        if not 0 <= root < self.size():
            raise ValueError("broadcast: root rank %d is outside 0..%d" % (root, self.size() - 1))
        with self._submit_lock, torch.no_grad():
            name = self._name("broadcast")
            flat, writeback = _flat(tensor)
            raw = _bytes(flat)
            return self._start(_Operation(name, [tensor], writeback), self._broadcast_pieces(raw, raw, root, name))

    def allgather(self, output_tensors, input_tensors, opts=None):
        tensor = _one(input_tensors, "allgather")
        if len(output_tensors) != 1:
            raise ValueError("allgather: one list of outputs per input tensor, got %d lists" % len(output_tensors))
        outputs = output_tensors[0]
        self._check_outputs(outputs, tensor, "allgather")
        with self._submit_lock, torch.no_grad():
            name = self._name("allgather")
            flat_in, _ = _flat(tensor)
            flats, writebacks = zip(*[_flat(o) for o in outputs])
            op = _Operation(name, list(outputs), lambda: [w() for w in writebacks if w is not None])
            return self._start(op, self._allgather_pieces(flat_in, list(flats), name))

    def _allgather_base(self, output, input, opts=None):
        if output.numel() != input.numel() * self.size() or output.dtype != input.dtype:
            raise ValueError("all_gather_into_tensor: the output must hold %d x %d elements of %s, it holds %d of %s"
                             % (self.size(), input.numel(), input.dtype, output.numel(), output.dtype))
        if not output.is_contiguous():
            raise ValueError("all_gather_into_tensor: the output tensor must be contiguous")
        with self._submit_lock, torch.no_grad():
            name = self._name("allgather")
            flat_in, _ = _flat(input)
            parts = list(output.view(self.size(), -1)) if input.numel() else []
            return self._start(_Operation(name, [output]), self._allgather_pieces(flat_in, parts, name))

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        output = _one(output_tensors, "reduce_scatter")
        if len(input_tensors) != 1:
            raise ValueError("reduce_scatter: one list of inputs per output tensor, got %d lists" % len(input_tensors))
        inputs = input_tensors[0]
        self._check_outputs(inputs, output, "reduce_scatter")
        with self._submit_lock, torch.no_grad():
            whole = torch.cat([t.reshape(-1) for t in inputs]) if inputs else output.new_empty(0)
            return self._reduce_scatter(output, whole, _op_of(opts))

    def _reduce_scatter_base(self, output, input, opts=None):
        if input.numel() != output.numel() * self.size() or output.dtype != input.dtype:
            raise ValueError("reduce_scatter_tensor: the input must hold %d x %d elements of %s, it holds %d of %s"
                             % (self.size(), output.numel(), output.dtype, input.numel(), input.dtype))
        with self._submit_lock, torch.no_grad():
            return self._reduce_scatter(output, input.reshape(-1).clone(), _op_of(opts))

    def _reduce_scatter(self, output, whole, op):
        # The agent has no reduce-scatter: an all-reduce of the whole input, of which this rank keeps its part.
        name = self._name("reduce_scatter")
        n = output.numel()
        mine = whole[self.rank() * n:(self.rank() + 1) * n]
        work_result = [output]
        agent_op = _agent_op(op, whole.dtype)
        if agent_op is not None:  # `whole` is reduced in place, then this rank's part is copied out
            operation = _Operation(name, work_result, lambda: output.copy_(mine.view(output.shape)))
            return self._start(operation, self._allreduce_pieces(whole, agent_op, name))
        gathered = torch.empty((self.size(), whole.numel()), dtype=whole.dtype, device=whole.device)

        def reduce_locally():
            output.copy_(_local_reduce(gathered[:, self.rank() * n:(self.rank() + 1) * n], op, name).view(output.shape))

        operation = _Operation(name, work_result, reduce_locally)
        return self._start(operation, self._allgather_pieces(whole, list(gathered), name))

    def reduce(self, tensors, opts=None):
        tensor = _one(tensors, "reduce")
        opts = _options(opts, dist.ReduceOptions)
        root = opts.rootRank
        if not 0 <= root < self.size():
            raise ValueError("reduce: root rank %d is outside 0..%d" % (root, self.size() - 1))
        with self._submit_lock, torch.no_grad():
            name = self._name("reduce")
            return self._reduce_into(tensor, _op_of(opts), name, keep=self.rank() == root, result=[tensor])

    def barrier(self, opts=None):
        with self._submit_lock:
            op = _Operation(self._name("barrier"), [])
            return self._start(op, [(None, None, lambda off, i: self._client.barrier_async(), None)])

    def _check_outputs(self, tensors, like, call):
        if len(tensors) != self.size():
            raise ValueError("%s: %d tensors for %d ranks" % (call, len(tensors), self.size()))
        for t in tensors:
            if t.numel() != like.numel() or t.dtype != like.dtype:
                raise ValueError("%s: every tensor must be %d elements of %s like this rank's, one is %d of %s"
                                 % (call, like.numel(), like.dtype, t.numel(), t.dtype))

    # -- what the agent cannot do -----------------------------------------------------------------------------------

    def send(self, *args, **kwargs):
        _unsupported("send", "the agent runs collectives of every rank; it has no point-to-point transfer")

    def recv(self, *args, **kwargs):
        _unsupported("recv", "the agent runs collectives of every rank; it has no point-to-point transfer")

    def recv_anysource(self, *args, **kwargs):
        _unsupported("recv_anysource", "the agent runs collectives of every rank; it has no point-to-point transfer")

    def alltoall(self, *args, **kwargs):
        _unsupported("all_to_all", "the agent has no personalised exchange")

    def alltoall_base(self, *args, **kwargs):
        _unsupported("all_to_all_single", "the agent has no personalised exchange")

    def gather(self, *args, **kwargs):
        _unsupported("gather", "use all_gather (every rank receives every tensor)")

    def scatter(self, *args, **kwargs):
        _unsupported("scatter", "use broadcast and let each rank take its part")

    def allgather_coalesced(self, *args, **kwargs):
        _unsupported("all_gather_coalesced", "call all_gather per tensor")

    def allreduce_coalesced(self, *args, **kwargs):
        _unsupported("all_reduce_coalesced", "call all_reduce per tensor, or on one flattened tensor")

    def monitored_barrier(self, *args, **kwargs):
        _unsupported("monitored_barrier", "use barrier(); the agent names a rank that does not arrive")


def _one(tensors, call):
    if torch.is_tensor(tensors):
        return tensors
    if len(tensors) != 1:
        raise ValueError("%s: backend 'xaf' takes one tensor per call (one device per process), got %d"
                         % (call, len(tensors)))
    return tensors[0]


def _flat(tensor):
    """A 1-D view of `tensor`, or of a contiguous copy plus the function that writes the copy back."""
    if tensor.is_contiguous():
        return tensor.view(-1), None
    copy = tensor.contiguous()
    return copy.view(-1), lambda: tensor.copy_(copy.view(tensor.shape))


def _bytes(flat):
    if flat.numel() == 0:
        return torch.empty(0, dtype=torch.uint8, device=flat.device)
    return flat.view(torch.uint8)


def _agent_op(op, dtype):
    """The agent's op for a reduction it runs itself (sum or average of float32, float16, bfloat16), or None for
    the reductions built from allgather. Refuses what cannot be reduced."""
    name = _OP_NAMES.get(op, str(op))
    if name == "premul_sum":
        _unsupported("all_reduce with ReduceOp.PREMUL_SUM", "multiply first, then all-reduce with SUM")
    if name == "avg" and not (dtype.is_floating_point or dtype.is_complex):
        raise TypeError("all_reduce: ReduceOp.AVG of %s; average floating-point tensors" % dtype)
    if name in ("band", "bor", "bxor") and (dtype.is_floating_point or dtype.is_complex):
        raise TypeError("all_reduce: ReduceOp.%s of %s; bitwise reductions take integer or bool tensors"
                        % (name.upper(), dtype))
    if name in ("sum", "avg") and dtype in _FLOAT_TYPES:
        return OP_SUM if name == "sum" else OP_AVERAGE
    if name not in ("sum", "avg", "product", "min", "max", "band", "bor", "bxor"):
        _unsupported("all_reduce with %s" % name, "its reduction is unknown to this backend")
    return None


def _local_reduce(gathered, op, name):
    """The reduction of the ranks' tensors (rows of `gathered`, in rank order)."""
    kind = _OP_NAMES[op]
    if kind == "sum":
        return gathered.sum(0, dtype=gathered.dtype) if gathered.dtype != torch.bool else gathered.any(0)
    if kind == "avg":
        return gathered.mean(0)
    if kind == "product":
        return gathered.prod(0, dtype=gathered.dtype) if gathered.dtype != torch.bool else gathered.all(0)
    if kind == "min":
        return gathered.min(0).values
    if kind == "max":
        return gathered.max(0).values
    out = gathered[0].clone()
    for row in gathered[1:]:
        if kind == "band":
            out &= row
        elif kind == "bor":
            out |= row
        else:
            out ^= row
    return out


# -- rendezvous -------------------------------------------------------------------------------------------------------

class AgentStore(dist.Store):
    """The rendezvous store of ranks that share no TCP address: a store whose writes are collectives of the agent.

    add(key, n) with n != 0 is an all-reduce of n over every rank (named by the key, so ranks that add to different
    keys get the agent's "differs across ranks" error), added to the key's value on every rank; add(key, 0) reads
    the value. That is the counting init_process_group and new_group do, every rank adding 1 once. Everything else
    a store offers needs one rank to write what another reads, which collectives cannot give: those calls raise,
    naming the call."""

    def __init__(self):
        super().__init__()
        self._values = {}

    def add(self, key, amount):
        if amount != 0:
            total = torch.tensor([float(amount)])
            _xaf.allreduce_(total, op=_xaf.Sum, name="store.add:%s" % key)
            value = self._values.get(key, 0) + int(round(total.item()))
            self._values[key] = value
        return self._values.get(key, 0)

    def _refuse(self, call):
        raise NotImplementedError(
            "the xaf rendezvous store (used when MASTER_ADDR is not set) serves only the counting that "
            "init_process_group and new_group do; %s needs a key-value store every rank reaches: set MASTER_ADDR "
            "and MASTER_PORT for torch's TCP store" % call)

    def set(self, key, value):
        self._refuse("set")

    def get(self, key):
        self._refuse("get")

    def compare_set(self, key, expected, desired):
        self._refuse("compare_set")

    def wait(self, keys, timeout=None):
        self._refuse("wait")

    def check(self, keys):
        self._refuse("check")

    def delete_key(self, key):
        self._refuse("delete_key")

    def num_keys(self):
        self._refuse("num_keys")


_stores = []  # the stores handed to torch: C++ holds them, and a Python store lives only as its Python object does


def _agent_rendezvous(url, timeout=None, **kwargs):
    _xaf.init()
    hello = _xaf._get().hello
    query = dict(p.split("=", 1) for p in url.split("?", 1)[1].split("&") if "=" in p) if "?" in url else {}
    for field, value in (("rank", hello.rank), ("world_size", hello.size)):
        if field in query and int(query[field]) not in (-1, value):
            raise ValueError("init_process_group was given %s=%s, but this process's agent serves rank %d of %d"
                             % (field, query[field], hello.rank, hello.size))
    store = AgentStore()
    _stores.append(store)
    yield store, hello.rank, hello.size
    raise RuntimeError("the xaf rendezvous runs once per process; there is no re-rendezvous")


def _install_rendezvous():
    module = importlib.import_module("torch.distributed.rendezvous")
    module.register_rendezvous_handler("xaf", _agent_rendezvous)
    handlers = getattr(module, "_rendezvous_handlers", None)
    env = handlers.get("env") if isinstance(handlers, dict) else None
    if env is None or getattr(env, "_xaf_wrapped", False):
        return

    def env_or_agent(url, **kwargs):
        # Launched beside an xaf agent with no MASTER_ADDR: the agent is the rendezvous (ranks across gateways
        # have no TCP address in common). With MASTER_ADDR set, torch's own env:// is used unchanged.
        if os.environ.get("XAF_AGENT_SOCKET") and not os.environ.get("MASTER_ADDR"):
            return _agent_rendezvous(url, **kwargs)
        return env(url, **kwargs)

    env_or_agent._xaf_wrapped = True
    handlers["env"] = env_or_agent


# -- the backend ------------------------------------------------------------------------------------------------------

def _create(store, rank, size, timeout):
    _xaf.init()
    hello = _xaf._get().hello
    if size != hello.size:
        raise NotImplementedError(
            "torch.distributed backend 'xaf' serves the whole job (%d ranks): a group of %d ranks (new_group with "
            "ranks=...) is not supported" % (hello.size, size))
    if rank != hello.rank:
        raise ValueError("init_process_group gave rank %d, but this process's agent serves rank %d of %d"
                         % (rank, hello.rank, hello.size))
    return ProcessGroupXaf(rank, size)


def _register():
    if BACKEND.upper() in getattr(dist.Backend, "_plugins", {}):
        return
    import inspect
    if "devices" in inspect.signature(dist.Backend.register_backend).parameters:  # torch 2.x
        dist.Backend.register_backend(BACKEND, _create, devices=["cpu", "cuda"])
    else:
        dist.Backend.register_backend(BACKEND, _create)
    _install_rendezvous()


_register()


def bf16_hook(process_group, bucket):
    """DistributedDataParallel's bf16 compression hook for any backend: divides the bucket by the world size, casts
    it to bfloat16, all-reduces it and casts the sum back. torch's own bf16_compress_hook refuses to run without
    CUDA 11 and NCCL 2.10 (torch 1.13 checks the hook's name, so this one has another); the same computation.

    Over the xaf backend the bf16 values reach the agent, which sends what its --wire-dtype says (bf16 halves the
    bytes on the wire)."""
    group = process_group if process_group is not None else dist.group.WORLD
    compressed = bucket.buffer().to(torch.bfloat16).div_(group.size())
    future = dist.all_reduce(compressed, group=group, async_op=True).get_future()

    def decompress(fut):
        decompressed = bucket.buffer()
        decompressed.copy_(fut.value()[0])
        return decompressed

    return future.then(decompress)
