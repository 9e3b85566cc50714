# Run by AgentPythonTest: every rank joins; the last rank then waits to be killed while the others all-reduce.
import sys
import time

import torch

import xaforward.torch as xaf

xaf.init()
r, n = xaf.rank(), xaf.size()
xaf.barrier()
print("READY rank", r, flush=True)
if r == n - 1:
    time.sleep(600)  # killed by the test
    sys.exit(0)
started = time.monotonic()
try:
    xaf.allreduce_(torch.ones(1000))
    print("UNEXPECTED the all-reduce completed", flush=True)
except xaf.AgentError as e:
    print("FAILED after %.1f s: %s" % (time.monotonic() - started, e), flush=True)
