"""The GRU surrogate trained towards the paper's budget, a stage per CPU core in the background, across
working sessions (docs/climate_mitigation.md §5.6): each session restarts it from the
checkpoint the last one committed, and commits where it got to.

    python baselines/surrogate_long_run.py start     # data if missing, the committed checkpoint, fit on one core
    python baselines/surrogate_long_run.py status    # epochs, validation RMSE, learning rate
    python baselines/surrogate_long_run.py stop      # end the background fit as Ctrl-C would
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

Stage 5: stage 4 stayed on its noise floor at lr ~1e-4 (best validation RMSE 1.048e-3 K at
epoch 172 of 181; the epochs' values scatter 1.05-1.6e-3), so it tested whether the decay is
what is missing: from stage 4's best weights, cosine decay from lr 3e-5 to 0 over 250 epochs
(50,000 steps, ~30 passes), the same data and splits. Its weights of epoch 183 ship.

Stage 6: from stage 5's best, the same data plus the episodes of 16 trained IPPO policies
(``trained``), half of every batch from the paper's scenarios.

Stage 7 (the one ``start`` runs by default): the authors' recipe as written, from scratch. Stage 1 of
the card ran it in epochs of 200 steps, so its "5 epochs without a better validation RMSE"
halved the rate after 1,000 steps where the authors' halves after 5 passes (8,335 steps): the
rate fell from 1e-3 to 2.5e-4 within 14,000 steps, and every stage since fine-tuned those
weights at rates of 1e-4 and below. Stage 7 keeps an epoch one pass (fit's defaults), so the
rate stays at 1e-3 until the validation RMSE stalls for 5 passes, as in the authors' run.

Stage 8: the same recipe from scratch, with stage 6's training data (the paper's scenarios, the
random and scripted paths and the trained policies' episodes; half of every batch from the
paper's). Stage 7 asks whether the authors' schedule reaches their test RMSE; stage 8 whether it
does so while also fitting the paths policies visit, so that its weights can ship without a
fine-tuning stage after. It runs beside stage 7, on the other core.

    python baselines/surrogate_long_run.py start --stage 8 --core 0   # another stage, on the other core

Stage 9: stage 6's fine-tuning (its data, half of every batch from the paper's scenarios, cosine
from 3e-5) applied to stage 7's best weights after 58 passes: whether the recipe's lower test
error survives learning the paths policies visit.

Stage 10: stage 7's training data ran to a training-split RMSE half its test RMSE (2.7e-4 against
5.35e-4 K at pass 69), so what is left is partly the gap between training and test scenarios.
Stage 10 continues stage 7 from its best after 91 passes, at its rate then, with 80,000 fresh
scenarios of the paper's generator (seeds 20,000-99,999; none in the paper's validation or test
splits) beside the paper's training scenarios, in passes of stage 7's length, run beside stage 7:
if the number of scenarios is what is missing, its validation RMSE falls faster per pass.
It did (4.01e-4 against 3.36e-4 K after 13 passes from the same weights), so stage 7 paused.

Stage 11: stage 9's fine-tuning applied to stage 10's best after 14 passes, with stage 10's
fresh scenarios drawn with the paper's for half of every batch (``fit --more-scenarios``): the
candidate to ship.

    python baselines/surrogate_long_run.py evaluate --stage K   # test split, held-out policy paths
    python baselines/surrogate_long_run.py table                # the evaluations as markdown
    python baselines/surrogate_long_run.py ship --stage K       # an evaluated stage becomes the shipped GRU
    python baselines/surrogate_long_run.py plot                 # curves.png: training and evaluations
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAVED = ROOT / "baselines" / "results" / "surrogate_long_run"
WORK = Path(os.environ.get("JAXCLIMATE_SURROGATE_WORK", "/work/surrogate"))  # the data and run folders (not committed)

DATA = ["-m", "jaxclimate.climate.dataset", "--scenarios", "20000", "--engine", "cicero-jax", "--workers", "1", "--no-progress"]
#: DATA's generator for 80,000 more scenarios from seed 20,000 on (none of the paper's), in larger chunks
FRESH = [*DATA[:2], "--scenarios", "80000", "--first-seed", "20000", *DATA[4:], "--chunk-size", "2000"]
EXTRA = ["-m", "jaxclimate.climate.policy_data", "--seed", "0", "--episodes", "10000", "--scenarios", "i", "ii", "--policies", "random", "scripted"]
JITTER = ["-m", "jaxclimate.climate.policy_data", "--seed", "0", "--jitter", "0.975", "1.025"]
FIT = [
    "-m", "jaxclimate.climate.fit", "--model", "gru", "--init-from", "shipped:gru", "--schedule", "cosine", "--lr", "1e-4",
    "--epochs", "1500", "--steps-per-epoch", "200", "--val-samples", "20000", "--early-stop-patience", "2000",
]  # fmt: skip
TRAINED = WORK / "trained"  # IPPO runs on the climate game whose visited episodes are data (trajectories.npz)
TRAINED_RUNS = {  # run name -> (scenario, network, first seed, seeds): seeds 0-3 for training, 100-101 held out
    f"{use}_{scenario}_{network}": (scenario, network, first, seeds)
    for use, first, seeds in (("train", 0, 4), ("heldout", 100, 2))
    for scenario in ("i", "ii")
    for network in ("mlp", "gru")
}


def _fine_tune(start_from: str, lr: str, epochs: str, *more: str) -> list[str]:
    return [
        "-m", "jaxclimate.climate.fit", "--model", "gru", "--init-from", start_from, "--schedule", "cosine", "--lr", lr,
        "--epochs", epochs, "--steps-per-epoch", "200", "--val-samples", "20000", "--early-stop-patience", "2000", *more,
    ]  # fmt: skip


#: the authors' recipe as their train.yaml writes it (fit's defaults): from scratch, the paper's
#: data only, AdamW lr 1e-3, an epoch one pass over the training windows (1,667 steps of batch
#: 512), the whole validation split every epoch, the rate halved after 5 epochs without a better
#: validation RMSE, early stopping after 30, at most 250 epochs
AUTHORS = ["-m", "jaxclimate.climate.fit", "--model", "gru"]
STAGES = {  # stage -> (run folder under WORK, where it is committed, extra data under WORK or None, fit's arguments besides --data/--extra-data/--run-dir)
    4: ("RUN4", SAVED, "EXTRA40k", FIT),
    5: ("RUN5", SAVED / "stage5", "EXTRA40k", _fine_tune(str(WORK / "RUN4"), "3e-5", "250")),
    6: ("RUN6", SAVED / "stage6", "EXTRA72k", _fine_tune(str(WORK / "RUN5"), "3e-5", "250", "--extra-fraction", "0.5")),
    7: ("RUN7", SAVED / "stage7", None, AUTHORS),
    # an epoch about one of stage 7's passes (1,667 steps; 1,668 as started), so the schedule's 5-epoch patience means the same
    8: ("RUN8", SAVED / "stage8", "EXTRA72k", [*AUTHORS, "--extra-fraction", "0.5", "--steps-per-epoch", "1668"]),
    # stage 6's fine-tuning of stage 5, applied to stage 7's best weights after 58 passes (those of pass 56), kept
    # as committed at the session stage 9 began, so that the card's chain says how many passes made them
    9: ("RUN9", SAVED / "stage9", "EXTRA72k", _fine_tune(str(SAVED / "stage7_pass58"), "3e-5", "250", "--extra-fraction", "0.5")),
    # stage 7 as committed after 91 passes (best pass 89), on at its rate then (1e-3 halved five times) with 80,000 fresh
    # scenarios of the paper's generator beside the paper's 14,000 training scenarios, sampled uniformly, in stage 7's
    # passes: run beside stage 7, whether its remaining test-training gap is the number of scenarios
    10: (
        "RUN10",
        SAVED / "stage10",
        "FRESH80k",
        [*AUTHORS, "--init-from", str(SAVED / "stage7_pass91"), "--lr", "3.125e-5", "--steps-per-epoch", "1667"],
    ),
    # stage 9's fine-tuning of stage 10's best after 14 passes (those of pass 13), kept as committed when stage 11
    # began, with stage 10's fresh scenarios kept beside the paper's (--more-scenarios: drawn with them)
    11: (
        "RUN11",
        SAVED / "stage11",
        "EXTRA72k",
        _fine_tune(str(SAVED / "stage10_pass14"), "3e-5", "250", "--extra-fraction", "0.5", "--more-scenarios", str(WORK / "FRESH80k")),
    ),
    # stage 11's fine-tuning continued from its best after 132 epochs (kept as committed when stage 12 began), with each
    # policy path joined by a jittered copy (EXTRA72kJ: every gas perturbed on its own): in scenario (i) the levers move
    # N2O in lock-step with the other gases, and stage 11's N2O response there was 6 % off, which misorders nearly equal
    # returns of a trained policy's episodes
    12: (
        "RUN12",
        SAVED / "stage12",
        "EXTRA72kJ",
        _fine_tune(str(SAVED / "stage11_epoch132"), "1.5e-5", "150", "--extra-fraction", "0.5", "--more-scenarios", str(WORK / "FRESH80k")),
    ),
}
#: the stage each starts from (its best weights): 3 is the weights shipped before stage 5, None from scratch
STARTS_FROM = {4: 3, 5: 4, 6: 5, 7: None, 8: None, 9: 7, 10: 7, 11: 10, 12: 11}
CURRENT = 7
#: what a run folder keeps beside its checkpoints (init_card.json: the card of the shipped weights
#: stage 4 started from, stage 3's; recovered from git for the run begun before fit kept it)
RUN_FILES = ("metrics.jsonl", "fit_config.json", "final_metrics.json", "init_card.json")


def _python(args: list[str], log: Path | None = None, background: bool = False, core: int = 1) -> subprocess.Popen | None:
    """``python ARGS`` pinned to ``core`` (a background fit keeps to its core; stage 7 trains on core 1)."""
    pin = ["taskset", "-c", str(core)] if shutil.which("taskset") and os.cpu_count() and os.cpu_count() > 1 else []
    command = [*pin, sys.executable, *args]
    if not background:
        subprocess.run(command, check=True, cwd=ROOT)
        return None
    out = open(log, "a") if log else subprocess.DEVNULL
    # a shell starting this in the background ignores SIGINT, and the child would inherit that:
    # restore it, so that ``stop`` (SIGINT) ends fit cleanly after saving, as Ctrl-C does
    restore_interrupt = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    return subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=restore_interrupt)


def trained_files(use: str | None = None) -> list[Path]:
    """The trajectories files of the IPPO runs for ``use`` ("train" or "heldout"; None: every run)."""
    return [TRAINED / name / "trajectories.npz" for name in TRAINED_RUNS if use is None or name.startswith(f"{use}_")]


def trained_runs(use: str | None = None, core: int = 0) -> list[Path]:
    """Train the IPPO runs whose episodes (the reservoir of 2,000 per seed each run keeps, over
    its whole training) join the data: the paper's preset, 4 seeds each of MLP and GRU policies
    per scenario for training, 2 more seeds each held out for evaluation. ~1-2 min a run on one
    core; each is skipped where its trajectories exist (the same command gives the same run).
    Returns the trajectories files of ``use`` ("train", "heldout"; None: every run)."""
    for name, (scenario, network, first, seeds) in TRAINED_RUNS.items():
        run = TRAINED / name
        if not (run / "trajectories.npz").exists():
            shutil.rmtree(run, ignore_errors=True)
            args = ["-m", "jaxclimate.train", "--env", f"climate-mitigation-{scenario}", "--preset", "paper", "--network", network]
            _python([*args, "--seeds", str(seeds), "--seed", str(first), "--run-dir", str(run), "--no-plots", "--quiet"], core=core)
    return trained_files(use)


def _restore(stage: int) -> Path:
    """The stage's run folder, from the committed checkpoint where this machine has none."""
    folder, saved, _, _ = STAGES[stage]
    run = WORK / folder
    if not (run / "checkpoints").exists() and (saved / "checkpoints").exists():
        run.mkdir(parents=True, exist_ok=True)
        shutil.copytree(saved / "checkpoints", run / "checkpoints")
        for name in RUN_FILES:
            if (saved / name).exists():
                shutil.copy(saved / name, run / name)
    return run


def _extra_data(name: str) -> Path:
    """An extra training set, made where missing: EXTRA40k the random and scripted paths,
    EXTRA72k those and the episodes of the training IPPO runs (:func:`trained_runs`), EXTRA72kJ
    EXTRA72k's paths each with a jittered copy, FRESH80k 80,000 scenarios of the paper's generator
    from seed 20,000 on (none of the paper's)."""
    out = WORK / name
    if name == "FRESH80k":  # resumes where a run was interrupted
        _python([*FRESH, "--out", str(out)], core=0)
    elif name == "EXTRA72kJ" and not (out / "manifest.json").exists():
        _python([*JITTER, "--jitter-of", str(_extra_data("EXTRA72k")), "--out", str(out)], core=0)
    elif not (out / "manifest.json").exists():
        trained = [] if name == "EXTRA40k" else [str(f) for f in trained_runs("train")]
        _python([*EXTRA, "--out", str(out), *(["--trajectories", *trained] if trained else [])])
    return out


def _fit_command(stage: int, run: Path) -> list[str]:
    _, _, extra, args = STAGES[stage]
    extra_args = [] if extra is None else ["--extra-data", str(_extra_data(extra))]
    if "--more-scenarios" in args:  # made where missing, as --extra-data's set is
        _extra_data(Path(args[args.index("--more-scenarios") + 1]).name)
    return [*args, "--data", str(WORK / "DATA"), *extra_args, "--run-dir", str(run)]


def start(stage: int = CURRENT, core: int = 1) -> None:
    """Make what is missing (the data are deterministic: the same command gives the same files),
    put the committed checkpoints in place, and start ``stage``'s ``fit`` in the background on ``core``."""
    WORK.mkdir(parents=True, exist_ok=True)
    if not (WORK / "DATA" / "manifest.json").exists():
        _python([*DATA, "--out", str(WORK / "DATA")])
    runs = {k: _restore(k) for k in STAGES}
    log = WORK / f"fit{stage}.log"
    proc = _python(_fit_command(stage, runs[stage]), log, background=True, core=core)
    (WORK / f"fit{stage}.pid").write_text(str(proc.pid))
    print(f"stage {stage}: fit started (pid {proc.pid}) on core {core} in {runs[stage]}; log {log}")


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (an ended child nobody has reaped yet stays as a zombie, state Z)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def stop(stage: int = CURRENT, wait_s: float = 300.0) -> None:
    """Interrupt ``stage``'s background fit as Ctrl-C would (it keeps the last finished epoch
    and writes its final metrics) and wait for it to end."""
    pid_file = WORK / f"fit{stage}.pid"
    if not pid_file.exists():
        raise SystemExit(f"stage {stage}: no fit was started on this machine ({pid_file} is missing)")
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:
        print(f"stage {stage}: fit (pid {pid}) had already ended")
        return
    deadline = time.monotonic() + wait_s
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(2)
    ended = not _running(pid)
    print(f"stage {stage}: fit (pid {pid}) {'ended' if ended else f'still running after {wait_s:.0f} s'}; {status(stage)['epochs']} epochs kept")


def _run_file(stage: int, name: str) -> Path | None:
    """A file of ``stage``'s run: this machine's copy, else the committed one (None: neither)."""
    folder, saved, _, _ = STAGES[stage]
    return next((p for p in (WORK / folder / name, saved / name) if p.exists()), None)


def _read_jsonl(path: Path | None) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path and path.exists() else []


def _metrics(stage: int) -> list[dict]:
    return _read_jsonl(_run_file(stage, "metrics.jsonl"))


def _fit_config(stage: int) -> dict:
    path = _run_file(stage, "fit_config.json")
    return json.loads(path.read_text()) if path else {}


def _start_folder(stage: int) -> Path | None:
    """The run folder whose best weights ``stage`` started from (its ``--init-from``), or None."""
    args = STAGES[stage][3]
    return Path(args[args.index("--init-from") + 1]) if "--init-from" in args else None


def _branches(stage: int) -> bool:
    """Whether ``stage`` started from a kept copy of the stage before while that one trains on
    (stage 9 from stage 7 after 58 passes), not from its run folder once it had stopped."""
    start, parent = _start_folder(stage), STARTS_FROM.get(stage)
    return start is not None and parent in STAGES and start != WORK / STAGES[parent][0]


def _rows_behind(stage: int, child: int) -> list[dict]:
    """``stage``'s epochs as far as ``child`` started from them: those the folder ``child``'s
    ``--init-from`` names keeps, else all of ``stage``'s."""
    start = _start_folder(child)
    kept = None if start is None else start / "metrics.jsonl"
    return _read_jsonl(kept) if kept is not None and kept.exists() else _metrics(stage)


def _best(rows: list[dict]) -> dict:
    """The epoch with the lowest validation RMSE (whose weights a run keeps as its best)."""
    return min(rows, key=lambda r: r["val_rmse"])


def _evaluations() -> list[dict]:
    return _read_jsonl(EVALUATIONS)


def status(stage: int = CURRENT) -> dict:
    rows = _metrics(stage)
    if not rows:
        return {"stage": stage, "epochs": 0}
    best = _best(rows)
    return {"stage": stage, "epochs": len(rows), "last": rows[-1], "best_epoch": best["epoch"], "best_val_rmse": best["val_rmse"]}


def save() -> None:
    """Each stage's latest checkpoint (~1 MB: parameters, best parameters, Adam's moments,
    schedule) and metrics, into the repository, replacing the last session's; then the curves."""
    for stage, (folder, saved, _, _) in STAGES.items():
        run = WORK / folder
        steps = sorted((p for p in (run / "checkpoints").glob("*") if p.name.isdigit()), key=lambda p: int(p.name))
        if not steps:  # not started on this machine, or still in its first epoch
            continue
        if (saved / "checkpoints").exists():
            shutil.rmtree(saved / "checkpoints")
        (saved / "checkpoints").mkdir(parents=True)
        shutil.copytree(steps[-1], saved / "checkpoints" / steps[-1].name)
        for name in RUN_FILES:
            if (run / name).exists():
                shutil.copy(run / name, saved / name)
        print(f"stage {stage}: saved epoch {steps[-1].name} to {saved}")
    plot()


TRAIN_WINDOWS = 854_000  # windows of the paper's training split: "passes" count samples seen over these
EVALUATIONS = SAVED / "evaluations.jsonl"


def _lineage_steps(stage: int) -> int:
    """Optimizer steps behind the weights a stage started from: stage 4 starts from stage 3's
    weights (shipped then), stages 5-6 from the best epoch of the one before, stages 7-8 from scratch,
    stage 9 from stage 7's best epoch as far as it had run (:func:`_rows_behind`)."""
    chain, root = lineage(stage)
    steps = STAGE3_STEPS if root == 3 else 0
    for earlier, child in zip(chain[:-1], chain[1:]):  # each up to its best epoch, whose weights the next one started from
        rows = _rows_behind(earlier, child)
        steps += sum(r["steps"] for r in rows[: _best(rows)["epoch"]])
    return steps


def evaluate(stage: int, trajectories: list[Path], core: int = 0) -> dict:
    """The stage's best weights so far, exported from a copy of its run (``fit
    --stop-after-epochs`` at its last epoch: nothing trained, the best weights evaluated on the
    paper's test split) and replayed on the held-out policy paths (``surrogate_policy_error.py``,
    seed 1, plus ``trajectories``: trained-policy episodes never used in training); one line
    appended to ``evaluations.jsonl`` (run ``docs/generate_tables.py`` after, for the table of §5.6).
    Runs on ``core`` (default 0, beside a stage training on core 1)."""
    if stage == 3:  # evaluated while it was the shipped GRU; the package now ships stage 5's
        raise SystemExit("stage 3 was evaluated while it was shipped (evaluations.jsonl); its weights are in the git history only")
    run, copy, export = WORK / STAGES[stage][0], WORK / f"eval{stage}", WORK / f"export{stage}"
    rows = _metrics(stage)
    if not rows:
        raise SystemExit(f"stage {stage} has no epochs yet")
    for path in (copy, export):
        shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(run, copy)
    epoch = max(int(p.name) for p in (copy / "checkpoints").iterdir() if p.name.isdigit())
    _python([*_fit_command(stage, copy), "--stop-after-epochs", str(epoch), "--export", str(export)], core=core)
    final = json.loads((copy / "final_metrics.json").read_text())
    best = _best(rows[:epoch])
    steps = _lineage_steps(stage) + sum(r["steps"] for r in rows[: best["epoch"]])
    record = {
        "stage": stage,
        "epoch": epoch,
        "best_epoch": best["epoch"],
        "steps": steps,
        "passes": steps * 512 / TRAIN_WINDOWS,
        "val_rmse": final["val_rmse"],
        "test_rmse": final["test_rmse"],
        "paper_split_rmse": paper_split_rmse(export, core),
        "policy_paths": _replay(stage, export, trajectories, core),
    }
    return _record(record)


def _replay(stage: int, weights: Path, trajectories: list[Path], core: int = 0) -> dict:
    """The held-out policy paths' errors of exported weights, by ``surrogate_policy_error.py`` on ``core``."""
    out = WORK / f"policy_error{stage}.json"
    replay = [str(ROOT / "baselines" / "surrogate_policy_error.py"), "--name", "gru", "--weights", str(weights), "--out", str(out)]
    _python(replay + (["--trajectories", *map(str, trajectories)] if trajectories else []), core=core)
    return json.loads(out.read_text())["rows"]


def paper_split_rmse(weights: Path, core: int = 0) -> dict[str, float]:
    """RMSE of exported weights on each of the paper's splits, the
    training split without the extra paths: a training RMSE far below the test RMSE says the
    gap is the data (generalisation), one near it says capacity or optimisation."""
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {core})  # before JAX starts its threads: the other core trains
    import jax

    from jaxclimate.climate import dataset, fit
    from jaxclimate.climate import surrogate as sg
    from jaxclimate.climate.weights_io import load_surrogate

    surrogate = load_surrogate("gru", weights)
    prepared = fit.prepare(dataset.load_dataset(WORK / "DATA"))
    evaluate = fit.make_evaluate(sg.build_model(surrogate.config), prepared)
    params = jax.tree_util.tree_map(jax.numpy.asarray, surrogate.params)
    return {split: float(evaluate(params, *fit.all_samples(ids))[0]) for split, ids in prepared.splits.items()}


def _record(record: dict) -> dict:
    with open(EVALUATIONS, "a") as f:
        f.write(json.dumps(record) + "\n")
    print(json.dumps({k: v for k, v in record.items() if k != "policy_paths"}, indent=2))
    return record


PAPER_TEST_RMSE, STAGE3_TEST_RMSE = 3.7e-4, 1.101e-3  # Table 1 (GRU); stage 3's weights (shipped before stage 5)
STAGE3_STEPS = 75_200  # optimizer steps behind stage 3's weights (stages 1-3 of the card)


STAGE_NOTES = {  # what each stage did, for the shipped card's notes (stages 1-3 are on the card already)
    4: "(4) From (3), on the paper's 20,000 scenarios plus 40,000 policy-induced paths (policy_data seed 0: 10,000 random "
    "and 10,000 scripted per scenario), cosine decay from lr 1e-4 over 1,500 epochs of 200 steps, on one CPU core in the "
    "background across sessions (~35 s an epoch), stopped after epoch {epochs}; its best validation epoch ({best}) starts (5).",
    5: "(5) From (4)'s best, cosine decay from lr 3e-5 over 250 epochs of 200 steps on the same data.",
    6: "(6) From (5)'s best, the same data plus 32,000 episodes visited by 16 IPPO policies trained on the game (MLP and GRU, "
    "seeds 0-3, both scenarios, the paper's preset; baselines/surrogate_long_run.py trained), half of every batch from the paper's "
    "scenarios (--extra-fraction 0.5; joined uniformly they would be 16 %), cosine decay from lr 3e-5 over 250 epochs.",
    7: "(7) The authors' recipe as their train.yaml writes it, from scratch, on the paper's 20,000 scenarios only: AdamW lr "
    "1e-3, an epoch one pass over the training windows (1,667 steps of batch 512), the whole validation split every epoch, "
    "the rate halved after 5 epochs without a better validation RMSE, early stopping after 30, at most 250 epochs; on one "
    "CPU core in the background across sessions (~300 s an epoch), stopped after epoch {epochs} (best {best}).",
    8: "(8) The authors' recipe as (7), from scratch, with the training data of (6): the paper's 20,000 scenarios plus 40,000 "
    "random and scripted policy paths and 32,000 episodes of 16 trained IPPO policies in the training split only, half of "
    "every batch from the paper's scenarios (--extra-fraction 0.5), an epoch 1,668 steps (about one of (7)'s passes); on one CPU "
    "core in the background across sessions, stopped after epoch {epochs} (best {best}).",
    9: "(9) From (7)'s best weights after 58 passes (those of pass 56, whole-split validation RMSE 5.4e-4 K), fine-tuned on the "
    "paper's 20,000 scenarios plus, in the training split only, 40,000 policy-induced paths (policy_data seed 0: 10,000 random "
    "and 10,000 scripted per scenario) and 32,000 episodes visited by 16 IPPO policies trained on the game (MLP and GRU, seeds "
    "0-3, both scenarios, the paper's preset; baselines/surrogate_long_run.py trained), half of every batch from the paper's "
    "scenarios (--extra-fraction 0.5), cosine decay from lr 3e-5 over 250 epochs of 200 steps (~33 s an epoch on one core); "
    "stopped after epoch {epochs} (best {best}).",
    10: "(10) From (7)'s best weights after 91 passes (those of pass 89), (7)'s recipe at its rate then (3.1e-5, halved after 5 "
    "epochs without a better validation RMSE) with 80,000 fresh scenarios of the paper's generator (seeds 20,000-99,999, CICERO-SCM "
    "in JAX) in the training split beside the paper's 14,000, batches drawn uniformly, an epoch 1,667 steps; stopped after epoch "
    "{epochs} (best {best}).",
    11: "(11) From (10)'s best weights after 14 of its passes (those of pass 13, whole-split validation RMSE 3.4e-4 K), fine-tuned on "
    "the paper's scenarios and (10)'s 80,000 fresh ones, drawn together for half of every batch (--more-scenarios), and for the other "
    "half 40,000 policy-induced paths (policy_data seed 0: 10,000 random and 10,000 scripted per scenario) and 32,000 episodes "
    "visited by 16 IPPO policies trained on the game (MLP and GRU, seeds 0-3, both scenarios, the paper's preset; "
    "baselines/surrogate_long_run.py trained), all in the training split only (--extra-fraction 0.5), cosine decay from lr 3e-5 "
    "over 250 epochs of 200 steps; stopped after epoch {epochs} (best {best}).",
    12: "(12) From (11)'s best weights after 132 of its epochs, (11)'s data with each of the 72,000 policy paths joined by a "
    "jittered copy (policy_data --jitter-of EXTRA72k --jitter 0.975 1.025: every gas's path multiplied on its own by the paper's "
    "smoothed growth perturbation at a third of its bounds, ~10 % by 2065), since the game's levers move the gases together, "
    "cosine decay from lr 1.5e-5 over 150 epochs of 200 steps; stopped after epoch {epochs} (best {best}).",
}


def lineage(stage: int) -> tuple[list[int], int | None]:
    """The stages behind ``stage``'s weights, oldest first, and where the first started: 3 (the
    weights shipped before stage 5, whose card tells stages 1-3) or None (from scratch)."""
    chain = [stage]
    while STARTS_FROM[chain[0]] not in (3, None):
        chain.insert(0, STARTS_FROM[chain[0]])
    return chain, STARTS_FROM[chain[0]]


def _family(stage: int) -> int:
    """The first stage of ``stage``'s line in the figure: 3 for the stages that fine-tune the
    card's stage 1-3 weights one after the other; a stage from scratch, or one that branches off
    a stage still training (:func:`_branches`), starts its own."""
    while STARTS_FROM.get(stage) in STAGES and not _branches(stage):
        stage = STARTS_FROM[stage]
    return 3 if STARTS_FROM.get(stage) == 3 else stage


def _root_notes(root: int | None) -> str:
    """The notes of the card a lineage starts from: stage 3's (kept by stage 4's run as
    init_card.json), or none for a stage from scratch."""
    if root is None:
        return ""
    return json.loads(_run_file(4, "init_card.json").read_text())["notes"].replace(
        "Three stages on a 2-core CPU.", "Trained in stages on a 2-core CPU."
    )


def _source_line(rows: dict, label: str) -> str:
    r = rows[label]
    return f"{label} {r['rmse_K']:.1e} K, tau {r['kendall_tau_T']:.4f}"


def _trained_taus(rows: dict, scenario: str) -> str:
    """τ of each held-out IPPO run of ``scenario``, and over its distinct episodes where recorded."""
    picked = [r for label, r in rows.items() if label.startswith(f"trained: heldout_{scenario}_")]
    text = "tau " + " / ".join(f"{r['kendall_tau_T']:.4f}" for r in picked)
    if picked and all("kendall_tau_T_distinct" in r for r in picked):
        text += " (over distinct episodes " + " / ".join(f"{r['kendall_tau_T_distinct']:.4f}" for r in picked) + ")"
    return text


def stage_notes(stage: int, record: dict) -> str:
    """The card's notes for the stages behind ``stage`` (from stage 4, or from scratch), with
    ``record`` (its evaluation) in numbers."""
    texts, chain = [], lineage(stage)[0]
    for k, child in zip(chain, [*chain[1:], None]):
        rows = _metrics(k) if child is None else _rows_behind(k, child)
        best = _best(rows)
        texts.append(STAGE_NOTES[k].format(epochs=len(rows), best=best["epoch"]))
    rows = record["policy_paths"]
    trained = {s: pooled_rmse(rows, f"trained: heldout_{s}_") for s in ("i", "ii")}
    train_split = record["paper_split_rmse"]["train"]
    ratio = record["test_rmse"] / train_split
    if record["test_rmse"] <= PAPER_TEST_RMSE:
        why = f"test {ratio:.1f}x that and below the paper's {PAPER_TEST_RMSE:.1e} K"
    elif ratio < 1.5:
        why = f"test {ratio:.1f}x that: the gap is mostly in fitting the training data (optimisation), not in generalising"
    else:
        why = f"test {ratio:.1f}x that: the weights generalise worse than they fit"
    texts.append(
        f"Exported at epoch {record['epoch']} of ({stage}) (best validation epoch {record['best_epoch']}; "
        f"{record['steps']:,} steps of batch 512 in all, {record['passes']:.0f} passes over the paper's training windows). "
        f"Paper-protocol test RMSE {record['test_rmse']:.3e} K (stage 3's weights {STAGE3_TEST_RMSE:.3e}); on the paper's "
        f"training split {train_split:.2e} K, {train_split / PAPER_TEST_RMSE:.1f}x the paper's test RMSE, {why}. "
        "Held-out policy paths (policy_data seed 1, 2,500 per source, 2016-2065): "
        + "; ".join(_source_line(rows, label) for label in ("i/random", "i/scripted", "ii/random", "ii/scripted"))
        + f"; episodes of IPPO policies never used in training (seeds 100-101, MLP / GRU): (i) {trained['i']:.1e} K, "
        f"{_trained_taus(rows, 'i')}, (ii) {trained['ii']:.1e} K, {_trained_taus(rows, 'ii')} (baselines/surrogate_long_run.py evaluate; baselines/results/surrogate_long_run/evaluations.jsonl)."
    )
    return " ".join(texts)


def table() -> str:
    """The evaluations as a markdown table: docs/climate_mitigation.md §5.6 (``docs/generate_tables.py`` writes it there)."""
    records = _evaluations()
    head = "| weights | passes | test RMSE | paper train split | (i) random · τ | (i) scripted · τ | (ii) random · τ | (ii) scripted · τ | trained IPPO (i) | trained IPPO (ii) |"
    lines = [head, "|---|" + "---:|" * 9]
    for r in records:
        rows = r["policy_paths"]
        name = "stage 3 (shipped before stage 5)" if r["stage"] == 3 else f"stage {r['stage']}, epoch {r['best_epoch']}"
        cells = [f"{rows[k]['rmse_K']:.1e} · {rows[k]['kendall_tau_T']:.3f}" for k in ("i/random", "i/scripted", "ii/random", "ii/scripted")]
        trained = [f"{pooled_rmse(rows, f'trained: heldout_{s}_'):.1e}" for s in ("i", "ii")]
        lines.append(
            f"| {name} | {r['passes']:.0f} | {r['test_rmse']:.3e} | {r['paper_split_rmse']['train']:.2e} | " + " | ".join(cells + trained) + " |"
        )
    target = "| paper (Table 1, GRU) | ≤ 250 | 3.7e-4 | — | 3.9e-4 · 0.996 (trained policies) | | 2.0e-4 · 0.997 (trained policies) | | | |"
    return "\n".join([*lines, target])


def ship(stage: int) -> None:
    """The stage's evaluated weights (``evaluate`` exported them) become the shipped GRU: their
    card (every stage's command, from the run folders) with the notes of the stages behind them,
    and ``weights/README.md`` regenerated."""
    from jaxclimate.climate.weights_io import write_weights_readme

    record = next((r for r in reversed(_evaluations()) if r["stage"] == stage), None)
    export = WORK / f"export{stage}"
    if record is None or not (export / "gru.json").exists():
        raise SystemExit(f"stage {stage} is not evaluated on this machine: run evaluate --stage {stage} first")
    shipped = ROOT / "jaxclimate" / "climate" / "weights"
    card = json.loads((export / "gru.json").read_text())
    # the notes of the card the lineage starts from (not today's shipped card, which may tell these stages already)
    card["notes"] = " ".join(filter(None, [_root_notes(lineage(stage)[1]), stage_notes(stage, record)]))
    (shipped / "gru.json").write_text(json.dumps(card, indent=2) + "\n")
    shutil.copy(export / "gru.msgpack", shipped / "gru.msgpack")
    print(f"shipped stage {stage} (epoch {record['epoch']}): {write_weights_readme()}")


def pooled_rmse(rows: dict, prefix: str) -> float:
    """RMSE pooled over the episode-years of every source whose label starts with ``prefix``."""
    picked = [r for label, r in rows.items() if label.startswith(prefix)]
    return (sum(r["rmse_K"] ** 2 * r["episodes"] for r in picked) / sum(r["episodes"] for r in picked)) ** 0.5 if picked else float("nan")


PAPER_POLICY_RMSE = {"i": 3.9e-4, "ii": 2.0e-4}  # Table 1 (GRU), replayed policy trajectories


def plot() -> None:
    """Left: validation and training RMSE against optimizer steps, every stage. Right: the
    evaluations (test RMSE, held-out policy paths) against passes. Into curves.png."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ev) = plt.subplots(1, 2, figsize=(14, 5))
    stage1 = ROOT / "jaxclimate" / "climate" / "weights" / "gru_training_metrics.jsonl"
    if stage1.exists():  # the authors' recipe in 200-step epochs, beside stage 7's in passes
        rows = _read_jsonl(stage1)
        steps = [sum(r["steps"] for r in rows[: i + 1]) for i in range(len(rows))]
        ax.plot(steps, [r["val_rmse"] for r in rows], lw=0.8, color="k", label="stage 1: validation (authors' recipe, 200-step epochs)")
    for stage in STAGES:
        rows = _metrics(stage)
        if not rows:
            continue
        start = _lineage_steps(stage)
        steps = [start + sum(r["steps"] for r in rows[: i + 1]) for i in range(len(rows))]
        # one colour per stage: matplotlib's ten but C7, grey, too near stage 1's black
        colour = [f"C{i}" for i in range(10) if i != 7][(stage - 4) % 9]
        val = _fit_config(stage).get("val_samples")
        val = "whole split" if val is None else f"{val // 1000}k windows"
        ax.plot(steps, [r["val_rmse"] for r in rows], lw=0.8, color=colour, label=f"stage {stage}: validation ({val})")
        ax.plot(steps, [r["train_rmse"] for r in rows], lw=0.8, alpha=0.4, color=colour, label=f"stage {stage}: training batches")
    ax.axhline(PAPER_TEST_RMSE, color="k", ls="--", lw=0.8, label="paper test RMSE (Table 1, GRU)")
    ax.axhline(STAGE3_TEST_RMSE, color="grey", ls=":", lw=0.8, label="stage 3's weights, test RMSE")
    ax.set(yscale="log", xlabel="optimizer steps (batch 512) behind the weights", ylabel="RMSE (K)", title="GRU surrogate: training")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x / 1000:.0f}k"))
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)  # below: the curves fill the axes
    records = sorted(_evaluations(), key=lambda r: r["passes"])
    families: dict[int, list[dict]] = {}  # one line per family: stages 3-6 fine-tune one model, 7 and 8 start afresh, 9 branches off 7
    for r in records:
        families.setdefault(_family(r["stage"]), []).append(r)
    for n, (first, family) in enumerate(sorted(families.items())):
        passes = [r["passes"] for r in family]
        labelled = n == 0  # each series once in the legend
        hollow = {} if first == 3 else {"mfc": "white"}  # the other lines, apart from the fine-tuned one
        ev.plot(passes, [r["test_rmse"] for r in family], "o-k", label="test split (paper protocol)" if labelled else None, **hollow)
        for scenario, colour in (("i", "tab:blue"), ("ii", "tab:orange")):
            paths = [pooled_rmse(r["policy_paths"], f"{scenario}/") for r in family]
            ev.plot(passes, paths, "s-", color=colour, label=f"({scenario}) random + scripted paths" if labelled else None, **hollow)
            trained = [pooled_rmse(r["policy_paths"], f"trained: heldout_{scenario}_") for r in family]
            ev.plot(passes, trained, "^--", color=colour, label=f"({scenario}) trained IPPO episodes" if labelled else None, **hollow)
    starts: dict[str, list[str]] = {}  # one legend line per start: "from scratch (7)", "from stage 7's weights (9, 10)"
    for k in sorted(families):
        if k != 3:
            starts.setdefault("from scratch" if STARTS_FROM[k] is None else f"from stage {STARTS_FROM[k]}'s weights", []).append(str(k))
    for n, (start, stages) in enumerate(starts.items()):  # named from the records, so a stage not yet evaluated is not claimed
        label = f"stage{'s' if len(stages) > 1 else ''} {', '.join(stages)} {start}"
        ev.plot([], [], "o", color="grey", mfc="white", label=("hollow: " if n == 0 else "") + label)
    if records:
        for scenario, colour in (("i", "tab:blue"), ("ii", "tab:orange")):
            ev.axhline(PAPER_POLICY_RMSE[scenario], color=colour, ls=":", lw=0.8, label=f"paper ({scenario}) policy paths")
        ev.axhline(PAPER_TEST_RMSE, color="k", ls=":", lw=0.8, label="paper test RMSE")
        placed: list[dict] = []
        for i, r in enumerate(records):  # a label near one already placed goes below its point instead of above
            if any(q["stage"] == r["stage"] and abs(q["passes"] - r["passes"]) < 5 for q in records[i + 1 :]):
                continue  # a stage's evaluations close together: one label, at the last
            near = any(abs(r["passes"] - p["passes"]) < 8 and abs(math.log(r["test_rmse"] / p["test_rmse"])) < 0.2 for p in placed)
            ev.annotate(f"stage {r['stage']}", (r["passes"], r["test_rmse"]), fontsize=7, xytext=(3, -10 if near else 4), textcoords="offset points")
            placed.append(r)
        ev.margins(x=0.12)
        ev.set(yscale="log", xlabel=f"passes (samples seen / {TRAIN_WINDOWS:,} paper training windows)", ylabel="RMSE (K)", title="held-out error")
        ev.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    fig.savefig(SAVED / "curves.png", dpi=110, bbox_inches="tight")  # the legends outside the axes included
    print(f"curves: {SAVED / 'curves.png'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["start", "stop", "status", "save", "plot", "evaluate", "trained", "ship", "table"])
    parser.add_argument(
        "--stage",
        type=int,
        default=CURRENT,
        choices=[3, *sorted(STAGES)],
        help="start: which stage trains (default the current one); evaluate, ship: which stage's best weights (3: stage 3's, shipped before stage 5)",
    )
    parser.add_argument("--trajectories", type=Path, nargs="*", default=[], help="evaluate: trained-policy episodes (trajectories.npz)")
    parser.add_argument(
        "--core", type=int, default=None, help="start: the core the training runs on (default 1); evaluate: the core it runs on (default 0)"
    )
    args = parser.parse_args(argv)
    if args.command == "evaluate" and not args.trajectories:  # the held-out trained-policy runs, where made
        args.trajectories = [f for f in trained_files("heldout") if f.exists()]
    if args.command == "trained":
        print("\n".join(map(str, trained_runs())))
    elif args.command == "table":
        print(table())
    elif args.command == "ship":
        ship(args.stage)
    elif args.command == "evaluate":
        evaluate(args.stage, args.trajectories, 0 if args.core is None else args.core)
    elif args.command == "start":
        start(args.stage, 1 if args.core is None else args.core)
    elif args.command == "stop":
        stop(args.stage)
    elif args.command == "save":
        save()
    elif args.command == "plot":
        plot()
    else:
        print(json.dumps(status(args.stage), indent=2))
    return 0


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/surrogate_long_run.py"))
