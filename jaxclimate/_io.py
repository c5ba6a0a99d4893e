"""Atomic file writes: write to a temporary sibling, then rename over the target, so a crash
never leaves a half-written file under the final name."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from pathlib import Path
from typing import Iterator

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


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold Ctrl-C back while the body runs (a checkpoint being written, a native module being
    imported) and raise it once the body is done: nothing is left half-written. Outside the
    main thread, where Python delivers no signals, the body simply runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda *_: pressed.append(1))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed:
        raise KeyboardInterrupt
