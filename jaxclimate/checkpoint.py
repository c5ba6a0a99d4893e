"""Checkpoints with orbax-checkpoint: atomic saves, latest-step restore, resume.

One small wrapper so the rest of the package does not depend on orbax's moving API:

    ckpt = Checkpointer(run_dir / "checkpoints", max_to_keep=2)
    ckpt.save(step, state)                      # atomic (orbax writes to a temp dir, then renames)
    state = ckpt.restore_latest(like=state)     # None if there is none yet
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxclimate._io import interrupts_held


class Checkpointer:
    def __init__(self, directory: str | Path, max_to_keep: int = 2):
        import orbax.checkpoint as ocp

        logging.getLogger("absl").setLevel(logging.WARNING)  # orbax logs every save at INFO
        self._ocp = ocp
        self.directory = Path(directory).absolute()
        self._manager = ocp.CheckpointManager(self.directory, options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True))

    def save(self, step: int, state: Any) -> None:
        state = jax.tree_util.tree_map(np.asarray, state)
        with interrupts_held():  # Ctrl-C waits for the checkpoint to be whole
            self._manager.save(int(step), args=self._ocp.args.StandardSave(state), force=True)
            self._manager.wait_until_finished()

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def restore_latest(self, like: Any) -> Any | None:
        """The latest checkpoint with the structure (and dtypes) of ``like``, or ``None``.
        ``like`` may be arrays on any device or their shapes (``jax.eval_shape``): only its
        shapes and dtypes are read, nothing is copied from a device."""
        step = self.latest_step()
        if step is None:
            return None
        abstract = jax.tree_util.tree_map(lambda x: np.zeros(np.shape(x), x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype), like)
        return self._manager.restore(step, args=self._ocp.args.StandardRestore(abstract))

    def close(self) -> None:
        self._manager.close()
