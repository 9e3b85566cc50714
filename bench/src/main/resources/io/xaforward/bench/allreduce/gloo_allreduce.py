"""One rank of PyTorch's Gloo all-reduce (torch.distributed over TCP) for `xaf bench allreduce --peers gloo`.

Started by the bench inside the rank's host namespace. Times all-reduces as the XAF workers do (a barrier, then
`iterations` back-to-back SUMs of float32 tensors, per size, per run), checks one exact SUM per size in the first
run, and reports on stdout in the bench's worker-line protocol (`@xaf KIND key=value ...`).
"""
import argparse
import datetime
import sys
import time
import zlib

from xaf_torch_rank import interface_of, line, tcp_retransmissions


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--ip", required=True, help="this rank's address")
    p.add_argument("--master", required=True, help="rank 0's address (the TCP store)")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--sizes", required=True, help="bytes, comma separated")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--iterations", type=int, default=2)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=0, help="torch intra-op threads; 0 keeps PyTorch's default")
    a = p.parse_args()

    import os
    os.environ["GLOO_SOCKET_IFNAME"] = interface_of(a.ip)
    import torch
    import torch.distributed as dist
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", init_method=f"tcp://{a.master}:{a.port}", rank=a.rank, world_size=a.world,
                            timeout=datetime.timedelta(seconds=120))
    retransmissions = tcp_retransmissions()
    line("ready", rank=a.rank, backend="gloo", torch=torch.__version__, interface=os.environ["GLOO_SOCKET_IFNAME"])
    sizes = [int(s) for s in a.sizes.split(",")]
    generator = torch.Generator().manual_seed(2024 + a.rank)
    for run in range(a.runs):
        for size in sizes:
            count = size // 4
            t = torch.rand(count, generator=generator) * 2 - 1
            for _ in range(a.warmup if run == 0 else 0):
                dist.all_reduce(t)
            dist.barrier()
            start = time.perf_counter()
            cpu = time.process_time()
            for _ in range(a.iterations):
                dist.all_reduce(t)
            seconds = (time.perf_counter() - start) / a.iterations
            cpu_seconds = (time.process_time() - cpu) / a.iterations
            values = dict(rank=a.rank, run=run, bytes=count * 4, algorithm="gloo", seconds=f"{seconds:.6f}",
                          cpu_seconds=f"{cpu_seconds:.6f}")
            if run == 0:
                # Integer-valued input, so the sum is exact whatever the order of additions: check it.
                t = torch.arange(count, dtype=torch.float32) % 1000 + a.rank
                dist.all_reduce(t)
                expected = (torch.arange(count, dtype=torch.float32) % 1000) * a.world + a.world * (a.world - 1) / 2
                ok = bool(torch.equal(t, expected))
                values.update(verified="true", ok=ok, max_error=f"{(t - expected).abs().max().item():.3e}",
                              checksum=format(zlib.crc32(t.numpy().tobytes()), "x"))
                if not ok:
                    print(f"rank {a.rank} failed: gloo all-reduce of {count * 4} bytes gave a wrong sum", file=sys.stderr)
                    line("result", **values)
                    sys.exit(1)
            else:
                values.update(verified="false")
            line("result", **values)
    line("done", rank=a.rank, retransmits=tcp_retransmissions() - retransmissions, sent_bytes=0, bad_token_drops=0)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
