"""Atomic file writes: write to a temporary sibling, then rename over the target, so a crash
never leaves a half-written file under the final name."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def atomic_savez(path: str | Path, **arrays: np.ndarray) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp.npz")  # np.savez appends .npz to other names
    np.savez(tmp, **arrays)
    os.replace(tmp, path)
