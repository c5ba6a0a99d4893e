"""Where a training run's metrics go: ``metrics.jsonl`` always, TensorBoard and Weights & Biases
on request (``python -m jaxclimate.train --logger tensorboard,wandb``).

Every logger receives the same scalars under the same names, flattened from one
``metrics.jsonl`` row by :func:`scalars_of`, at the same step (env steps per seed):

==================================  ====================================================
``{group}/episode_return_mean``      mean return of the episodes that ended in the update,
                                     over seeds and agents (absent when none ended)
``{group}/{loss}``                   the algorithm's losses and statistics, over seeds
``episode/{metric}``                 the environment's episode metrics, over seeds
==================================  ====================================================

Loggers run on the host after each compiled chunk: they receive Python floats from rows
already written to ``metrics.jsonl``, never traced values, so nothing inside the compiled
program waits on them. ``metrics.jsonl`` is always written because resuming, the reports and
``jaxclimate.evaluate`` read it.
"""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path
from typing import Any, Protocol

from jaxclimate.reporting import nan_mean
from jaxclimate.run_options import RunOptions

#: logger name -> (module it needs, the extra that installs it)
LOGGERS = {"jsonl": (None, None), "tensorboard": ("tensorboardX", "tensorboard"), "wandb": ("wandb", "wandb")}


class Logger(Protocol):
    def log(self, scalars: dict[str, float], step: int) -> None: ...

    def close(self) -> None: ...


def parse_loggers(text: str) -> list[str]:
    """``"jsonl,tensorboard"`` -> names; ``ValueError`` naming what is unknown or not installed."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    for name in names:
        if name not in LOGGERS:
            raise ValueError(f"--logger: unknown logger {name!r}; choose from {', '.join(LOGGERS)} (comma-separated)")
        module, extra = LOGGERS[name]
        if module is not None and not _importable(module):
            raise ValueError(f"--logger {name} needs the {module} package: pip install 'jaxclimate[{extra}]'")
    return list(dict.fromkeys(names))


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def scalars_of(row: dict[str, Any]) -> dict[str, float]:
    """One ``metrics.jsonl`` row as named scalars (see the module docstring); non-finite values
    (an update in which no episode ended) are left out, so plots show a gap."""
    scalars = {}
    for key, value in row.items():
        if key in ("update", "env_steps"):
            continue
        if key == "episode":
            scalars.update({f"episode/{name}": float(nan_mean(v)) for name, v in value.items()})
        elif isinstance(value, dict):
            scalars.update({f"{key}/{name}": float(v) for name, v in value.items() if name != "episode_return"})
    return {name: v for name, v in scalars.items() if math.isfinite(v)}


class TensorBoardLogger:
    """Event files under ``RUN_DIR/tensorboard`` (``tensorboard --logdir RUN_DIR``)."""

    def __init__(self, run_dir: Path, options: RunOptions):
        from tensorboardX import SummaryWriter

        self.writer = SummaryWriter(logdir=str(run_dir / "tensorboard"))
        self.writer.add_text("config", "```\n" + json.dumps(options.recorded(), indent=2, default=str) + "\n```", 0)

    def log(self, scalars: dict[str, float], step: int) -> None:
        for name, value in scalars.items():
            self.writer.add_scalar(name, value, step)

    def close(self) -> None:
        self.writer.close()


class WandbLogger:
    """A Weights & Biases run (project ``options.wandb_project``, default ``jaxclimate``),
    files under ``RUN_DIR/wandb``; ``WANDB_MODE=offline`` keeps it local (``wandb sync`` later).
    The run's id is derived from the run folder, so ``--resume`` continues the same W&B run."""

    def __init__(self, run_dir: Path, options: RunOptions):
        import wandb

        run_id = f"{zlib.crc32(str(run_dir.resolve()).encode()):08x}"
        self.run = wandb.init(
            project=options.wandb_project or "jaxclimate", dir=str(run_dir), id=run_id, name=run_dir.name, config=options.recorded(), resume="allow"
        )

    def log(self, scalars: dict[str, float], step: int) -> None:
        self.run.log(scalars, step=step)

    def close(self) -> None:
        self.run.finish()


class MetricsSink:
    """``metrics.jsonl`` plus the requested loggers, written by the process that writes the
    run's files (the others compute only). The loggers keep the run's recorded options (those
    of ``config.json``) beside the metrics."""

    def __init__(self, run_dir: Path, options: RunOptions, writer: bool):
        self.path, self.writer = run_dir / "metrics.jsonl", writer
        makers = {"tensorboard": TensorBoardLogger, "wandb": WandbLogger}
        names = [n for n in options.loggers if n in makers]
        self.loggers: list[Logger] = [makers[n](run_dir, options) for n in names] if writer else []

    def write(self, lines: list[str]) -> None:
        if not self.writer:
            return
        with open(self.path, "a", encoding="utf8") as f:
            f.write("\n".join(lines) + "\n")
        for line in lines:
            row = json.loads(line)
            for logger in self.loggers:
                logger.log(scalars_of(row), row["env_steps"])

    def close(self) -> None:
        for logger in self.loggers:
            logger.close()
        self.loggers = []
