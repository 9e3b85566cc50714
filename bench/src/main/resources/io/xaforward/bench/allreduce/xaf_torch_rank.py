"""Helpers of the bench's PyTorch rank scripts (gloo_allreduce.py, ddp_gloo_train.py), copied beside them.

Each rank runs inside its host namespace and reports to the bench in its worker-line protocol
(`@xaf KIND key=value ...` on stdout).
"""
import subprocess


def interface_of(ip):
    """The interface that holds `ip` in this namespace: Gloo binds its pairs to an interface, not an address."""
    for text in subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True, check=True).stdout.splitlines():
        fields = text.split()
        if len(fields) > 3 and fields[3].split("/")[0] == ip:
            return fields[1].split("@")[0]
    raise SystemExit(f"xaf: no interface holds {ip} in this namespace")


def line(kind, **values):
    """One worker line: `@xaf KIND key=value ...`, flushed at once."""
    print("@xaf " + kind + "".join(f" {k}={v}" for k, v in values.items()), flush=True)


def tcp_retransmissions():
    """TCP segments retransmitted in this network namespace so far (/proc/net/snmp is per namespace)."""
    with open("/proc/net/snmp") as f:
        rows = [r.split() for r in f if r.startswith("Tcp:")]
    return int(rows[1][rows[0].index("RetransSegs")])
