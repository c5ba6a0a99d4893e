"""What a run or a benchmark batch will hold on the device, checked before it is built.

A run that does not fit should fail when it is configured, with the setting to lower named,
not minutes later in an allocator error. The device's memory is its allocator's limit
(``memory_stats()["bytes_limit"]`` on a GPU or TPU) or, on the CPU, the host's physical
memory.
"""

from __future__ import annotations

import os
from typing import Any

import jax

#: Share of the device's memory a run's persistent state may take: the rest is left to the
#: compiled program's temporaries (a chunk's rollout, the update's minibatches).
STATE_SHARE = 0.6


def tree_bytes(tree: Any) -> int:
    """Bytes of every array (or ``ShapeDtypeStruct``) leaf of ``tree``."""
    return sum(int(x.size) * x.dtype.itemsize for x in jax.tree_util.tree_leaves(tree))


def device_memory_bytes(device: Any = None) -> int | None:
    """The memory one device offers (None where it cannot be read)."""
    device = jax.local_devices()[0] if device is None else device
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if stats and stats.get("bytes_limit"):
        return int(stats["bytes_limit"])
    if device.platform == "cpu" and hasattr(os, "sysconf"):
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            return None
    return None


def gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def check_fits(nbytes: int, what: str, lower: str, device: Any = None, share: float = STATE_SHARE) -> None:
    """Raise ``MemoryError`` naming ``lower`` when ``nbytes`` exceeds ``share`` of the
    device's memory."""
    device = jax.local_devices()[0] if device is None else device
    limit = device_memory_bytes(device)
    if limit is not None and nbytes > share * limit:
        raise MemoryError(f"{what} needs {gib(nbytes)} on each {device.device_kind} device, more than {share:.0%} of its {gib(limit)}; lower {lower}")


def split_batch(n: int, bytes_per_item: float, device: Any = None, share: float = 0.5) -> int:
    """A batch that fits ``share`` of the device's memory for ``n`` items of
    ``bytes_per_item`` (``n`` halved until it fits, then the largest divisor of ``n`` not
    above that), to run the items as ``n // batch`` sequential batches."""
    limit = device_memory_bytes(device)
    batch = n
    while limit is not None and batch > 1 and batch * bytes_per_item > share * limit:
        batch = (batch + 1) // 2
    while n % batch:  # a divisor of n, so the batches are equal
        batch -= 1
    return batch
