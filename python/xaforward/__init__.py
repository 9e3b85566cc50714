"""XAForward for PyTorch: data-parallel training through a per-rank XAForward agent (`xaf agent`).

Use it the way Horovod is used::

    import xaforward.torch as xaf
    xaf.init()
    xaf.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = xaf.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())

See docs/PYTORCH.md. The protocol client (`xaforward.agent`) needs only the standard library; `xaforward.torch`
needs torch (Debian's python3-torch).
"""

__version__ = "0.1.0"
