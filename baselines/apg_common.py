"""What the APG result scripts (``baselines/apg_*.py``) share: a training run as a user starts
it, and the record written with its figure."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jaxclimate import run  # noqa: E402
from jaxclimate._io import atomic_write_text  # noqa: E402
from jaxclimate.run import flags as run_flags  # noqa: E402

RESULTS = ROOT / "baselines" / "results"


def train_apg(flags: list[str], run_dir: Path) -> tuple[dict[str, Any], float, str]:
    """``python -m jaxclimate.train --algo apg FLAGS``, run in this process (the run library):
    its summary, the wall seconds (compilation included) and the command line."""
    argv = [*flags, "--algo", "apg"]
    start = time.perf_counter()
    summary = run.train(run_flags.build_options([*argv, "--run-dir", str(run_dir), "--quiet", "--no-plots"]))
    if summary.get("interrupted") or summary.get("non_finite"):  # Ctrl-C (or a failed run) ends the whole script
        raise KeyboardInterrupt if summary.get("interrupted") else FloatingPointError(summary["non_finite"])
    return summary, round(time.perf_counter() - start, 1), "python -m jaxclimate.train " + " ".join(argv)


def provenance(script: str, argv: list[str] | None) -> dict[str, str]:
    """What every record says of where it came from: the command that wrote it (``argv``, or
    this process's arguments), the device and the jax version."""
    import jax

    args = sys.argv[1:] if argv is None else argv
    return {"command": f"python baselines/{script} " + " ".join(args), "device": jax.devices()[0].device_kind, "jax": jax.__version__}


def finish_figure(fig: Any, path: Path, axes: Any, legend: bool = True) -> None:
    """A light grid (and small legends) on ``axes``, then the figure at ``path`` (120 dpi), closed."""
    import matplotlib.pyplot as plt
    import numpy as np

    for ax in np.ravel(axes):
        ax.grid(alpha=0.3)
        if legend:
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def save(record: dict, out: str | Path, plot: Callable[[dict, Path], None] | None = None) -> None:
    """The record as JSON at ``out`` (atomically) and its figure beside it (``.png``)."""
    atomic_write_text(out, json.dumps(record, indent=1) + "\n")
    if plot is not None:
        plot(record, Path(out).with_suffix(".png"))
    print(f"wrote {out}")
