"""The GRU surrogate trained towards the paper's budget, on one CPU core in the background, across
working sessions (docs/climate_mitigation.md §4.4): each session restarts it from the
checkpoint the last one committed, and commits where it got to.

    python baselines/surrogate_long_run.py start     # data if missing, the committed checkpoint, fit on one core
    python baselines/surrogate_long_run.py status    # epochs, validation RMSE, learning rate
    python baselines/surrogate_long_run.py save      # the latest checkpoint and metrics into the repository

Stage 4 of the shipped GRU's card (``jaxclimate/climate/weights/gru.json``): from the shipped
weights, the paper's 20,000 scenarios (CICERO-SCM in JAX) plus 40,000 policy-induced paths in
the training split only (random and scripted policies of both scenarios, seed 0), cosine decay
from lr 1e-4 over 1,500 epochs of 200 steps of batch 512 (300,000 steps, ~180 passes over the
training windows). The validation and test splits and the normalisation are the paper's.
``fit`` checkpoints every epoch and resumes from the last one, so a session loses at most the
epoch it was in. Early stopping is off (patience 2,000): at lr 1e-4 the validation RMSE wanders
around 1.2e-3 for the first epochs, above the shipped weights' 1.16e-3, and the authors'
patience of 30 epochs ended the first attempt after 31 (its checkpoint continued, with only the
patience changed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAVED = ROOT / "baselines" / "results" / "surrogate_long_run"
WORK = Path(os.environ.get("JAXCLIMATE_SURROGATE_WORK", "/work/surrogate"))  # the data and run folders (not committed)

DATA = ["-m", "jaxclimate.climate.dataset", "--scenarios", "20000", "--engine", "cicero-jax", "--workers", "1", "--no-progress"]
EXTRA = ["-m", "jaxclimate.climate.policy_data", "--seed", "0", "--episodes", "10000", "--scenarios", "i", "ii", "--policies", "random", "scripted"]
FIT = [
    "-m", "jaxclimate.climate.fit", "--model", "gru", "--init-from", "shipped:gru", "--schedule", "cosine", "--lr", "1e-4",
    "--epochs", "1500", "--steps-per-epoch", "200", "--val-samples", "20000", "--early-stop-patience", "2000",
]  # fmt: skip


def _python(args: list[str], log: Path | None = None, background: bool = False) -> subprocess.Popen | None:
    """``python ARGS`` on core 1 (the other stays free for the session's work)."""
    pin = ["taskset", "-c", "1"] if shutil.which("taskset") and os.cpu_count() and os.cpu_count() > 1 else []
    command = [*pin, sys.executable, *args]
    if not background:
        subprocess.run(command, check=True, cwd=ROOT)
        return None
    out = open(log, "a") if log else subprocess.DEVNULL
    return subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def start() -> None:
    """Make what is missing (the data are deterministic: the same command gives the same files),
    put the committed checkpoint in place, and start ``fit`` in the background."""
    WORK.mkdir(parents=True, exist_ok=True)
    data, extra, run = WORK / "DATA", WORK / "EXTRA40k", WORK / "RUN4"
    if not (data / "manifest.json").exists():
        _python([*DATA, "--out", str(data)])
    if not (extra / "manifest.json").exists():
        _python([*EXTRA, "--out", str(extra)])
    if not (run / "checkpoints").exists() and (SAVED / "checkpoints").exists():
        run.mkdir(parents=True, exist_ok=True)
        shutil.copytree(SAVED / "checkpoints", run / "checkpoints")
        for name in ("metrics.jsonl", "fit_config.json"):
            shutil.copy(SAVED / name, run / name)
    proc = _python([*FIT, "--data", str(data), "--extra-data", str(extra), "--run-dir", str(run)], WORK / "fit.log", background=True)
    print(f"fit started (pid {proc.pid}) in {run}; log {WORK / 'fit.log'}")


def status() -> dict:
    rows = [json.loads(line) for line in (WORK / "RUN4" / "metrics.jsonl").read_text().splitlines() if line.strip()]
    best = min(rows, key=lambda r: r["val_rmse"])
    return {"epochs": len(rows), "last": rows[-1], "best_epoch": best["epoch"], "best_val_rmse": best["val_rmse"]}


def save() -> None:
    """The latest checkpoint (~1 MB: parameters, best parameters, Adam's moments, schedule) and
    the metrics, into the repository, replacing the last session's."""
    run = WORK / "RUN4"
    steps = sorted((p for p in (run / "checkpoints").iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    if SAVED.exists():
        shutil.rmtree(SAVED)
    (SAVED / "checkpoints").mkdir(parents=True)
    shutil.copytree(steps[-1], SAVED / "checkpoints" / steps[-1].name)
    for name in ("metrics.jsonl", "fit_config.json"):
        shutil.copy(run / name, SAVED / name)
    print(f"saved epoch {steps[-1].name} to {SAVED}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["start", "status", "save"])
    args = parser.parse_args(argv)
    if args.command == "start":
        start()
    elif args.command == "save":
        save()
    else:
        print(json.dumps(status(), indent=2))
    return 0


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/surrogate_long_run.py"))
