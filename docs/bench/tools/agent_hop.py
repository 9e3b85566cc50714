"""Where the time of an all-reduce through `xaf agent` goes, seen from the training process (agent-hop.sh runs it
on every rank). Prints one JSON line per size on rank 0.

For each gradient size, medians over --reps repetitions of:
  copy      copying a CPU tensor into the shared segment and back (the two copies the agent hop adds)
  fixed     a 1-float all-reduce request: socket round trip + the order check + a minimal all-reduce
  request   an all-reduce request on floats already in the segment: what the agent's Java collectives take, plus fixed
  full      xaf.allreduce_(tensor): copy in, request, copy out
The agent hop's cost over the Java collective alone is about full - (request - fixed) (request - fixed being the
Java collective's own time), taken per repetition and reported as its median.
"""
import argparse
import json
import statistics
import time

import torch

import xaforward.torch as xaf
from xaforward.agent import OP_AVERAGE


def timed_ms(fn):
    xaf.barrier()  # every rank starts together: the time is the operation's, not a peer's lateness
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes-mb", default="1,4,16")
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    xaf.init()
    state = xaf._get()
    client, shm = state.client, state.shm
    for mb in [int(s) for s in args.sizes_mb.split(",")]:
        n = mb * (1 << 20) // 4
        grad = torch.randn(n)
        region = shm[:n]

        def copy():
            region.copy_(grad)
            grad.copy_(region)

        def fixed():
            client.wait(client.allreduce_async(0, 1, OP_AVERAGE, "fixed"))

        def request():
            client.wait(client.allreduce_async(0, n, OP_AVERAGE, "request"))

        def full():
            xaf.allreduce_(grad, name="full")

        kinds = (("copy", copy), ("fixed", fixed), ("request", request), ("full", full))
        for _ in range(3):  # warm-up: the agent's JIT and first-use plans (staging buffers per element count)
            for _, fn in kinds:
                timed_ms(fn)
        # Interleaved, so that load from other processes falls on every kind alike; the hop is taken per repetition.
        samples = {name: [] for name, _ in kinds}
        hop = []
        for _ in range(args.reps):
            rep = {name: timed_ms(fn) for name, fn in kinds}
            for name in rep:
                samples[name].append(rep[name])
            hop.append(rep["full"] - (rep["request"] - rep["fixed"]))
        result = {"mb": mb, "floats": n, "world": xaf.size(), "reps": args.reps}
        for name in samples:
            result[name + "_ms"] = round(statistics.median(samples[name]), 3)
        result["hop_ms"] = round(statistics.median(hop), 3)
        result["hop_share_of_full"] = round(result["hop_ms"] / result["full_ms"], 3)
        if xaf.rank() == 0:
            print(json.dumps(result), flush=True)


main()
