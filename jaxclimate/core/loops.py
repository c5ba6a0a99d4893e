"""How many steps of a ``lax.scan`` run per loop iteration, by backend.

Unrolling does the same arithmetic in fewer, larger loop iterations. On a GPU every iteration
costs kernel launches and a round trip for the loop condition, so a small body pays mostly
overhead: measured on an H200, IPPO's update ran 1.4× faster with its scans unrolled by 5 and
CICERO-SCM in JAX 1.8× faster with its sub-step scans unrolled by 4 (docs/gpu.md). On the CPU
unrolling mostly lengthens the compile, so the automatic choice there is 1.
"""

from __future__ import annotations

import jax


def loop_unroll(requested: int | bool | None, on_accelerator: int) -> int | bool:
    """``requested`` when given (an int >= 1, or ``True`` for the whole loop), else
    ``on_accelerator`` on a GPU/TPU and 1 on the CPU (``None`` or 0: automatic)."""
    if requested is None or (requested == 0 and not isinstance(requested, bool)):
        return 1 if jax.default_backend() == "cpu" else on_accelerator
    return 1 if requested is False else requested
