# Run by AgentPrivacyTest as root: the client refuses an agent socket served by another user, and every shared
# segment that is not the agent's own file in /dev/shm; a proper one is accepted. Prints one line per case.
import os
import socket
import struct
import sys
import tempfile
import threading

work = sys.argv[1]
NOBODY = 65534


def case(name, fn):
    try:
        fn()
        print("ACCEPTED %s" % name, flush=True)
    except Exception as e:  # the line names the error's class: AgentError is what the test expects
        print("REFUSED %s: %s: %s" % (name, type(e).__name__, e), flush=True)


# 1. A socket that another user serves, in a directory of that user's.
theirs = os.path.join(work, "nobody")
os.mkdir(theirs, 0o700)
os.chown(theirs, NOBODY, NOBODY)
path = os.path.join(theirs, "agent.sock")
ready_r, ready_w = os.pipe()
child = os.fork()
if child == 0:
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, NOBODY)
    os.setresuid(NOBODY, NOBODY, NOBODY)
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(1)
    os.write(ready_w, b"x")
    conn, _ = server.accept()
    conn.recv(1)
    os._exit(0)
os.read(ready_r, 1)

from xaforward.agent import AgentClient  # noqa: E402

case("peer of uid %d" % NOBODY, lambda: AgentClient(path).close())
os.waitpid(child, 0)

# 2. An agent that answers with an error about the connection (request id 0), as one does to a refused peer: the
# client ends with that reason, not with "closed the connection".
refusing = socket.socket(socket.AF_UNIX)
refusing_path = os.path.join(tempfile.mkdtemp(dir=work), "agent.sock")
refusing.bind(refusing_path)
refusing.listen(1)


def refuse_once():
    conn, _ = refusing.accept()
    reason = b"this agent serves its own user only"
    body = struct.pack("<BIBH", 0, 0, 1, len(reason)) + reason
    conn.sendall(struct.pack("<I", len(body)) + body)
    conn.shutdown(socket.SHUT_WR)
    conn.recv(4096)
    conn.close()


threading.Thread(target=refuse_once, daemon=True).start()


def hello_refused():
    client = AgentClient(refusing_path)
    try:
        client.hello()
    finally:
        client.close()


case("connection-level error", hello_refused)

# 3. A stand-in agent of this user that names whatever segment the case sets.
import xaforward.torch as xaf  # noqa: E402

shm_bytes = 4096
named = {"path": ""}
private = tempfile.mkdtemp(dir=work)
agent_path = os.path.join(private, "agent.sock")
listener = socket.socket(socket.AF_UNIX)
listener.bind(agent_path)
listener.listen(8)


def serve():
    while True:
        conn, _ = listener.accept()
        try:
            while True:
                header = conn.recv(4, socket.MSG_WAITALL)
                if len(header) < 4:
                    break
                body = conn.recv(struct.unpack("<I", header)[0], socket.MSG_WAITALL)
                kind, rid = struct.unpack_from("<BI", body)
                reply = struct.pack("<BIB", kind, rid, 0)
                if kind == 1:
                    p = named["path"].encode()
                    reply += struct.pack("<IIIQH", 0, 1, 0, shm_bytes, len(p)) + p
                conn.sendall(struct.pack("<I", len(reply)) + reply)
        finally:
            conn.close()


threading.Thread(target=serve, daemon=True).start()
os.environ["XAF_AGENT_SOCKET"] = agent_path
tag = "xaf-client-check-%d" % os.getpid()
elsewhere = os.path.join(work, "not-a-segment")
with open(elsewhere, "wb") as f:
    f.write(b"\0" * shm_bytes)
os.chmod(elsewhere, 0o600)
made = []


def shm_file(suffix, mode=0o600, uid=None):
    p = "/dev/shm/%s-%s" % (tag, suffix)
    with open(p, "wb") as f:
        f.write(b"\0" * shm_bytes)
    os.chmod(p, mode)
    if uid is not None:
        os.chown(p, uid, uid)
    made.append(p)
    return p


def init_with(p):
    def run():
        named["path"] = p
        xaf.init()
    return run


try:
    link = "/dev/shm/%s-link" % tag
    os.symlink(elsewhere, link)
    made.append(link)
    case("symlink in /dev/shm to a file elsewhere", init_with(link))
    case("file outside /dev/shm", init_with(elsewhere))
    case("path climbing out of /dev/shm", init_with("/dev/shm/../.." + elsewhere))
    case("segment of mode 0644", init_with(shm_file("wide", 0o644)))
    case("segment of uid %d" % NOBODY, init_with(shm_file("foreign", 0o600, NOBODY)))
    small = shm_file("small")
    os.truncate(small, 16)
    case("segment smaller than announced", init_with(small))
    case("the agent's own segment", init_with(shm_file("own")))
    print("RANK %d" % xaf.rank(), flush=True)
    xaf.shutdown()
finally:
    for p in made:
        os.unlink(p)
print("DONE", flush=True)
