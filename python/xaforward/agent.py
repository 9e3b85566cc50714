"""The client side of the agent protocol (docs/PYTORCH.md, "Protocol"): length-prefixed little-endian frames on the
agent's Unix socket. Standard library only; `xaforward.torch` builds the tensor API on it.

Requests carry an id; several may be in flight and replies may come in any order, so replies are kept by id until
their waiter asks for them. One lock guards the socket: gradient hooks may run on autograd's threads.
"""

import os
import socket
import stat
import struct
import threading

VERSION = 1
MAX_FRAME = 4096
MAX_NAME = 1024

HELLO, ALLREDUCE, BROADCAST, BARRIER, BYE = 1, 2, 3, 4, 5
OP_SUM, OP_AVERAGE = 0, 1
_OK, _ERROR = 0, 1
_TYPE_NAMES = {HELLO: "hello", ALLREDUCE: "allreduce", BROADCAST: "broadcast", BARRIER: "barrier", BYE: "bye"}


class AgentError(RuntimeError):
    """The agent answered a request with an error, or the connection to it is gone."""


class Hello(tuple):
    """The agent's answer to hello: who this rank is and where the shared segment lies."""
    __slots__ = ()
    _fields = ("rank", "size", "local_rank", "shm_bytes", "shm_path")

    def __new__(cls, rank, size, local_rank, shm_bytes, shm_path):
        return tuple.__new__(cls, (rank, size, local_rank, shm_bytes, shm_path))

    rank = property(lambda self: self[0])
    size = property(lambda self: self[1])
    local_rank = property(lambda self: self[2])
    shm_bytes = property(lambda self: self[3])
    shm_path = property(lambda self: self[4])


class AgentClient:
    """One connection to an agent. Not for use after `close`."""

    def __init__(self, path, timeout=None):
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(path)
        except OSError as e:
            self._sock.close()
            raise AgentError("cannot reach the XAForward agent at %s (%s): is `xaf agent` running for this rank?"
                             % (path, e)) from e
        try:
            _check_peer(self._sock, path)
        except AgentError:
            self._sock.close()
            raise
        self._sock.settimeout(timeout)
        self._send_lock = threading.Lock()
        self._recv_lock = threading.Lock()
        self._next_id = 1
        self._replies = {}
        self._lost = None

    # -- requests -----------------------------------------------------------------------------------------------

    def hello(self):
        rid = self._send(HELLO, struct.pack("<HI", VERSION, os.getpid() & 0xFFFFFFFF))
        return self.wait(rid)

    def allreduce_async(self, offset, count, op, name):
        """Starts an all-reduce of `count` floats at byte `offset` of the shared segment; returns the request id."""
        return self._send(ALLREDUCE, struct.pack("<QIB", offset, count, op) + _name(name))

    def broadcast_async(self, offset, count, root, name):
        """Starts a broadcast of `count` 4-byte words at byte `offset` from rank `root`; returns the request id."""
        return self._send(BROADCAST, struct.pack("<QIi", offset, count, root) + _name(name))

    def barrier_async(self):
        """Starts a barrier; returns the request id. The agent runs it in order with the collectives before it."""
        return self._send(BARRIER, b"")

    def barrier(self):
        self.wait(self.barrier_async())

    def bye(self):
        """Ends this rank's part: returns once every rank said bye (the agent's final barrier)."""
        self.wait(self._send(BYE, b""))

    def close(self):
        try:
            self._sock.close()
        except OSError:
            pass

    # -- frames -------------------------------------------------------------------------------------------------

    def _send(self, kind, body):
        with self._send_lock:
            rid = self._next_id
            self._next_id = (self._next_id + 1) & 0xFFFFFFFF or 1
            frame = struct.pack("<I", 5 + len(body)) + struct.pack("<BI", kind, rid) + body
            try:
                self._sock.sendall(frame)
            except OSError as e:
                raise AgentError("lost the connection to the XAForward agent at %s (%s): it left the job, see its log"
                                 % (self.path, e)) from e
            return rid

    def wait(self, rid):
        """Waits for the reply to request `rid`; returns its value (Hello for hello, else None) or raises AgentError."""
        while True:
            with self._recv_lock:
                if rid in self._replies:
                    return _result(self._replies.pop(rid))
                if self._lost is not None:
                    raise AgentError(self._lost)
                try:
                    kind, got, value = self._read_reply()
                except AgentError as e:
                    self._lost = str(e)
                    raise
                if got == rid:
                    return _result((kind, value))
                if got == 0 and isinstance(value, AgentError):  # about the connection, not one request: it ends
                    self._lost = str(value)
                    raise value
                self._replies[got] = (kind, value)

    def _read_reply(self):
        header = self._read_exactly(4)
        (length,) = struct.unpack("<I", header)
        if length < 6 or length > MAX_FRAME:
            raise AgentError("the agent sent a reply frame of %d bytes; this client speaks protocol version %d"
                             % (length, VERSION))
        body = self._read_exactly(length)
        kind, rid, status = struct.unpack_from("<BIB", body, 0)
        rest = body[6:]
        if status == _ERROR:
            (n,) = struct.unpack_from("<H", rest, 0)
            return kind, rid, AgentError("xaf agent: %s: %s" % (_TYPE_NAMES.get(kind, "request"),
                                                                  rest[2:2 + n].decode("utf-8", "replace")))
        if kind == HELLO:
            rank, size, local_rank, shm_bytes, n = struct.unpack_from("<IIIQH", rest, 0)
            return kind, rid, Hello(rank, size, local_rank, shm_bytes, rest[22:22 + n].decode("utf-8"))
        return kind, rid, None

    def _read_exactly(self, n):
        chunks = []
        while n > 0:
            try:
                chunk = self._sock.recv(n)
            except OSError as e:
                raise AgentError("lost the connection to the XAForward agent at %s (%s)" % (self.path, e)) from e
            if not chunk:
                raise AgentError("the XAForward agent at %s closed the connection: it left the job (its log says why)"
                                 % self.path)
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)


def _check_peer(sock, path):
    """Refuses a socket served by another user: whoever serves it sees every gradient and returns the sums."""
    pid, uid, gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    if uid != os.geteuid():
        raise AgentError("the process serving %s (pid %d) runs as uid %d, not as this user (uid %d): refusing it; "
                         "an agent's socket belongs in a directory only its user can enter" % (path, pid, uid,
                                                                                              os.geteuid()))


SHM_DIR = "/dev/shm"


def open_segment(path, size):
    """Opens the shared segment the agent's hello names, read-write, after checking that it is the agent's own:
    a regular file directly in /dev/shm (no link on the way), owned by this user, mode 0600, at least `size` bytes.
    Returns the open descriptor; the caller maps that (not the path again), so the file checked is the file mapped."""
    if not isinstance(path, str) or os.path.dirname(path) != SHM_DIR or os.path.basename(path) in ("", ".", ".."):
        raise AgentError("the agent named shared segment %r, which is not a file directly in %s: refusing to map it"
                         % (path, SHM_DIR))
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise AgentError("cannot open the agent's shared segment %s (%s): refusing to map it; a symbolic link "
                         "there is refused" % (path, e)) from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise AgentError("the agent's shared segment %s is not a regular file: refusing to map it" % path)
        if st.st_uid != os.geteuid():
            raise AgentError("the agent's shared segment %s belongs to uid %d, not to this user (uid %d): refusing "
                             "to map it" % (path, st.st_uid, os.geteuid()))
        if stat.S_IMODE(st.st_mode) != 0o600:
            raise AgentError("the agent's shared segment %s has mode %04o, not 0600: refusing to map it"
                             % (path, stat.S_IMODE(st.st_mode)))
        if st.st_size < size:
            raise AgentError("the agent's shared segment %s has %d bytes, its hello said %d: refusing to map it"
                             % (path, st.st_size, size))
        return fd
    except BaseException:
        os.close(fd)
        raise


def _name(name):
    # cut at a character boundary: the agent refuses a name that is not UTF-8
    data = name.encode("utf-8")[:MAX_NAME].decode("utf-8", "ignore").encode("utf-8")
    return struct.pack("<H", len(data)) + data


def _result(reply):
    kind, value = reply
    if isinstance(value, AgentError):
        raise value
    return value
