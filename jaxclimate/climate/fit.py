"""Train a CICERO-SCM surrogate (paper §3.2; the authors' recipe).

    python -m jaxclimate.climate.fit --model gru --data data/cicero20k --run-dir runs/gru

MSE on raw ΔT, AdamW (lr 1e-3, weight decay 1e-4), batch 512; the learning rate halves when
the validation RMSE has not improved (relative threshold 1e-4) for 5 epochs (min 1e-6);
training stops after 30 epochs without improvement > 1e-8 and the best-validation weights
are kept. Scenarios are split 70/15/15 and inputs z-scored with training statistics
(``dataset.py``).

The GRU trains through ``surrogate.apply``, whose hand-written backward pass gives autodiff's
gradients (tested) ~1.2x faster per step on CPU (164–184 → 144 ms at batch 512, one core).

Differences from the authors, all options: batches are drawn uniformly with replacement from
the training windows; ``--steps-per-epoch`` defines shorter "epochs" (validation, LR schedule
and early stopping run per epoch) and ``--val-samples`` validates on a fixed random subset
(the final validation and test metrics always use every sample); ``--time-budget`` stops
cleanly after that many minutes. ``--schedule cosine`` replaces the plateau halving by a cosine
decay per epoch from ``--lr`` to the minimum learning rate over ``--epochs``, and
``--init-from RUN`` starts from the best weights of an earlier run of the same model and
dataset (fine-tuning with a fresh optimiser). The run directory holds ``metrics.jsonl`` and orbax
checkpoints; running the same command again resumes from the last epoch and gives the same
result as an uninterrupted run. Ctrl-C saves and exits.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxclimate._cli import OneLineParser
from jaxclimate.climate import dataset as ds
from jaxclimate.climate import surrogate as sg
from jaxclimate.core.precision import at_physics_precision


@dataclasses.dataclass(frozen=True)
class FitConfig:
    model: str = "gru"
    learning_rate: float = 1e-3
    weight_decay: float = 1e-4
    batch_size: int = 512
    max_epochs: int = 250
    steps_per_epoch: int | None = None  # None: one pass over the training windows
    plateau_factor: float = 0.5
    plateau_patience: int = 5
    plateau_threshold: float = 1e-4
    min_learning_rate: float = 1e-6
    early_stop_patience: int = 30
    early_stop_delta: float = 1e-8
    val_samples: int | None = None  # None: the whole validation split every epoch
    seed: int = 0
    split_seed: int = 0
    schedule: str = "plateau"  # "plateau" (the authors') or "cosine" (per epoch, over max_epochs)
    init_from: str | None = None  # a run directory whose best weights start this run, or "shipped:<name>"
    extra_data: str | None = None  # a dataset folder whose scenarios join the training split only
    # the share of each batch drawn from extra_data's scenarios (None: uniformly over the joined
    # training split, so a large extra set crowds out the paper's scenarios)
    extra_fraction: float | None = None
    # a dataset folder of more scenarios of the paper's generator (``dataset --first-seed``): they
    # join the paper's training scenarios, drawn with them (not counted in extra_fraction's share)
    more_scenarios: str | None = None

    def __post_init__(self) -> None:
        checks = {
            "learning_rate": self.learning_rate > 0,
            "weight_decay": self.weight_decay >= 0,
            "batch_size": self.batch_size >= 1,
            "max_epochs": self.max_epochs >= 1,
            "steps_per_epoch": self.steps_per_epoch is None or self.steps_per_epoch >= 1,
            "plateau_factor": 0 < self.plateau_factor < 1,
            "plateau_patience": self.plateau_patience >= 0,
            "early_stop_patience": self.early_stop_patience >= 1,
            "val_samples": self.val_samples is None or self.val_samples >= 1,
            "schedule": self.schedule in ("plateau", "cosine"),
            "extra_fraction": self.extra_fraction is None or (0 < self.extra_fraction < 1 and self.extra_data is not None),
        }
        bad = [k for k, ok in checks.items() if not ok]
        if bad:
            hint = " (extra_fraction: in (0, 1), with extra_data)" if "extra_fraction" in bad else ""
            raise ValueError(f"invalid FitConfig field(s) {bad}: {[getattr(self, k) for k in bad]}{hint}")
        sg.SurrogateConfig.paper(self.model)  # validates the model kind


@dataclasses.dataclass
class PreparedData:
    histories: jax.Array  # (n, 176, 5) z-scored float32
    targets: jax.Array  # (n, 61) float32, K
    splits: dict[str, np.ndarray]
    mean: np.ndarray
    std: np.ndarray
    window_index: jax.Array  # (61, 66)
    extra_start: int | None = None  # scenario ids from here on are the extra data's (None: no extra data)


def prepare(
    data: dict[str, np.ndarray],
    split_seed: int = 0,
    window: int = ds.WINDOW,
    extra: dict[str, np.ndarray] | None = None,
    more: dict[str, np.ndarray] | None = None,
) -> PreparedData:
    """Splits, normalisation statistics and device arrays from ``dataset.load_dataset``.
    ``extra`` (another dataset, e.g. policy-induced paths) and ``more`` (more scenarios of the
    paper's generator) join the training split only: validation, test and the normalisation
    statistics stay those of ``data``. Ids: ``data``'s, then ``more``'s, then ``extra``'s
    (``extra_start``), so that a batch's share of extra data leaves ``more`` with the paper's."""
    n = len(data["seeds"])
    if n < 3:
        raise ValueError(f"need at least 3 scenarios for a train/val/test split, got {n}")
    if more is not None and np.intersect1d(data["seeds"], more["seeds"]).size:
        # the same seed is the same scenario: some would be the paper's validation or test scenarios
        raise ValueError(
            f"FitConfig.more_scenarios: seeds {more['seeds'].min()}..{more['seeds'].max()} overlap the dataset's; make them with --first-seed {n} or more"
        )
    splits = ds.split_scenarios(n, split_seed)
    mean, std = ds.normalisation_stats(data["emissions"], splits["train"], window)
    joined = [d for d in (more, extra) if d is not None]
    if joined:
        added = sum(len(d["emissions"]) for d in joined)
        data = {k: np.concatenate([data[k], *(d[k] for d in joined)]) for k in ("emissions", "dT")}
        splits = {**splits, "train": np.concatenate([splits["train"], n + np.arange(added)])}
    full = ds.scenarios.full_history(data["emissions"])
    histories = ((full - mean) / std).astype(np.float32)
    targets = data["dT"][:, ds.FIRST_TARGET_INDEX : ds.FIRST_TARGET_INDEX + ds.N_TARGETS].astype(np.float32)
    n_more = 0 if more is None else len(more["emissions"])
    extra_start = None if extra is None else n + n_more
    return PreparedData(jnp.asarray(histories), jnp.asarray(targets), splits, mean, std, jnp.asarray(ds.window_indices(window)), extra_start)


def gather_windows(data: PreparedData, scenario: jax.Array, target: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Inputs (B, 66, 5) and targets (B,) for (scenario, target-year index) pairs."""
    rows = data.window_index[target]  # (B, 66)
    return data.histories[scenario[:, None], rows], data.targets[scenario, target]


def make_optimizer(config: FitConfig) -> optax.GradientTransformation:
    return optax.inject_hyperparams(optax.adamw)(learning_rate=config.learning_rate, weight_decay=config.weight_decay)


def mse_loss(model, params, x: jax.Array, y: jax.Array) -> jax.Array:
    # surrogate.apply: the model's own output, with a faster backward pass for the GRU
    return jnp.mean((sg.apply(model.config, params, x) - y) ** 2)


def batch_scenarios(key: jax.Array, groups: list[jax.Array], sizes: list[int]) -> jax.Array:
    """Scenario ids of one batch: ``sizes[i]`` drawn uniformly (with replacement) from
    ``groups[i]``, each group from its own key."""
    keys = jax.random.split(key, len(groups))
    return jnp.concatenate([ids[jax.random.randint(k, (size,), 0, len(ids))] for k, ids, size in zip(keys, groups, sizes)])


def make_train_epoch(model, optimizer, data: PreparedData, batch_size: int, steps: int, extra_fraction: float | None = None):
    """Jitted: (params, opt_state, key) -> (params, opt_state, mean train loss) over ``steps``.
    ``extra_fraction``: that share of every batch comes from the extra data's scenarios, the
    rest from the paper's (else every batch is drawn from the joined training split)."""
    train_ids = np.asarray(data.splits["train"])
    if extra_fraction is None:
        joined = jnp.asarray(train_ids)

        def train_ids_of(key):
            return joined[jax.random.randint(key, (batch_size,), 0, len(joined))]
    else:
        if data.extra_start is None:
            raise ValueError("FitConfig.extra_fraction needs extra data (extra_data)")
        n_extra = int(round(batch_size * extra_fraction))
        groups = [jnp.asarray(train_ids[train_ids < data.extra_start]), jnp.asarray(train_ids[train_ids >= data.extra_start])]

        def train_ids_of(key):
            return batch_scenarios(key, groups, [batch_size - n_extra, n_extra])

    def step(carry, key):
        params, opt_state = carry
        k_s, k_t = jax.random.split(key)
        s = train_ids_of(k_s)
        t = jax.random.randint(k_t, (batch_size,), 0, ds.N_TARGETS)
        x, y = gather_windows(data, s, t)
        loss, grads = jax.value_and_grad(lambda p: mse_loss(model, p, x, y))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), loss

    @jax.jit
    @at_physics_precision  # the GRU's hand-written backward pass is traced here, not in apply
    def epoch(params, opt_state, key):
        (params, opt_state), losses = jax.lax.scan(step, (params, opt_state), jax.random.split(key, steps))
        return params, opt_state, losses.mean()

    return epoch


def make_evaluate(model, data: PreparedData, batch_size: int = 4096):
    """Jitted: (params, scenario ids (m,), target ids (m,)) -> (rmse, r2) over those samples."""

    @jax.jit
    @at_physics_precision
    def evaluate(params, scenario, target):
        m = scenario.shape[0]
        size = min(batch_size, m)  # fewer samples than a batch: one batch of their size, not a padded 4,096
        n_batches = -(-m // size)
        pad = n_batches * size - m
        s = jnp.pad(scenario, (0, pad)).reshape(n_batches, size)
        t = jnp.pad(target, (0, pad)).reshape(n_batches, size)

        def predict(args):
            x, y = gather_windows(data, *args)
            return model.apply({"params": params}, x), y

        pred, y = jax.lax.map(predict, (s, t))
        valid = (jnp.arange(n_batches * size) < m).reshape(n_batches, size)
        err2 = jnp.where(valid, (pred - y) ** 2, 0.0)
        mean_y = jnp.sum(jnp.where(valid, y, 0.0)) / m
        sst = jnp.sum(jnp.where(valid, (y - mean_y) ** 2, 0.0))
        return jnp.sqrt(jnp.sum(err2) / m), 1.0 - jnp.sum(err2) / sst

    return evaluate


def all_samples(scenario_ids: np.ndarray) -> tuple[jax.Array, jax.Array]:
    s = np.repeat(scenario_ids, ds.N_TARGETS)
    t = np.tile(np.arange(ds.N_TARGETS), len(scenario_ids))
    return jnp.asarray(s, jnp.int32), jnp.asarray(t, jnp.int32)


def initial_state(config: FitConfig, params: Any, optimizer) -> dict[str, Any]:
    return {
        "params": params,
        "opt_state": optimizer.init(params),
        "best_params": params,
        "key": np.asarray(jax.random.key_data(jax.random.PRNGKey(config.seed))),
        "epoch": np.asarray(0),
        "best_val": np.asarray(np.inf),
        "epochs_since_best": np.asarray(0),
        "plateau_best": np.asarray(np.inf),
        "plateau_bad": np.asarray(0),
        "learning_rate": np.asarray(config.learning_rate, np.float32),
    }


def cosine_learning_rate(config: FitConfig, epoch: int) -> float:
    """lr_min + ½ (lr − lr_min)(1 + cos(π · epoch / max_epochs)): the rate for epoch ``epoch + 1``."""
    lo, hi = config.min_learning_rate, config.learning_rate
    return lo + 0.5 * (hi - lo) * (1 + math.cos(math.pi * min(epoch, config.max_epochs) / config.max_epochs))


def update_schedule(state: dict, val_rmse: float, config: FitConfig) -> dict:
    """Host-side learning-rate schedule (ReduceLROnPlateau, mode min, relative threshold; or
    the cosine decay) and early-stopping counters."""
    state = dict(state)
    if config.schedule == "cosine":
        state["learning_rate"] = np.asarray(cosine_learning_rate(config, int(state["epoch"])), np.float32)
    elif val_rmse < float(state["plateau_best"]) * (1 - config.plateau_threshold):
        state["plateau_best"], state["plateau_bad"] = np.asarray(val_rmse), np.asarray(0)
    else:
        state["plateau_bad"] = np.asarray(int(state["plateau_bad"]) + 1)
        if int(state["plateau_bad"]) > config.plateau_patience:
            lr = max(float(state["learning_rate"]) * config.plateau_factor, config.min_learning_rate)
            state["learning_rate"], state["plateau_bad"] = np.asarray(lr, np.float32), np.asarray(0)
    if val_rmse < float(state["best_val"]) - config.early_stop_delta:
        state["best_val"], state["epochs_since_best"] = np.asarray(val_rmse), np.asarray(0)
        state["best_params"] = state["params"]
    else:
        state["epochs_since_best"] = np.asarray(int(state["epochs_since_best"]) + 1)
    return state


def fit(
    data: dict[str, np.ndarray],
    config: FitConfig,
    run_dir: str | Path,
    *,
    time_budget_s: float | None = None,
    stop_after_epochs: int | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Train (or resume) in ``run_dir``; returns a summary with the best params and metrics.

    ``stop_after_epochs`` ends this call after that epoch while a cosine schedule still decays
    over ``config.max_epochs`` (the reproducible form of a run that a time budget stopped)."""
    from tqdm.auto import tqdm

    from jaxclimate.checkpoint import Checkpointer

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    _check_run_config(run_dir, config)
    extra, more = (None if folder is None else ds.load_dataset(folder) for folder in (config.extra_data, config.more_scenarios))
    prepared = prepare(data, config.split_seed, extra=extra, more=more)
    model_config = sg.SurrogateConfig.paper(config.model)
    model = sg.build_model(model_config)
    optimizer = make_optimizer(config)
    params = sg.init_params(model_config, jax.random.PRNGKey(config.seed + 1))
    state = initial_state(config, params, optimizer)
    if config.init_from is not None:
        state = initial_state(config, _best_params_of(Path(config.init_from), state), optimizer)
        _keep_starting_card(config.init_from, run_dir)
    ckpt = Checkpointer(run_dir / "checkpoints")
    restored = ckpt.restore_latest(like=state)
    if restored is not None:
        state = restored
        print(f"resuming {run_dir} after epoch {int(state['epoch'])}", file=sys.stderr)
    n_train = len(prepared.splits["train"]) * ds.N_TARGETS
    steps = config.steps_per_epoch or max(1, n_train // config.batch_size)
    train_epoch = make_train_epoch(model, optimizer, prepared, config.batch_size, steps, config.extra_fraction)
    evaluate = make_evaluate(model, prepared)
    val_s, val_t = _validation_samples(prepared, config)
    start = time.perf_counter()
    bar = tqdm(total=config.max_epochs, initial=int(state["epoch"]), unit="epoch", desc=f"fit {config.model}", disable=not progress)
    stop_reason = "max_epochs"
    try:
        while int(state["epoch"]) < config.max_epochs:
            if int(state["epochs_since_best"]) >= config.early_stop_patience:
                stop_reason = "early_stopping"
                break
            if time_budget_s is not None and time.perf_counter() - start > time_budget_s:
                stop_reason = "time_budget"
                break
            if stop_after_epochs is not None and int(state["epoch"]) >= stop_after_epochs:
                stop_reason = "stop_after_epochs"
                break
            key, sub = jax.random.split(jax.random.wrap_key_data(jnp.asarray(state["key"])))
            state["opt_state"].hyperparams["learning_rate"] = jnp.asarray(state["learning_rate"])
            params, opt_state, train_loss = train_epoch(state["params"], state["opt_state"], sub)
            val_rmse, val_r2 = (float(v) for v in evaluate(params, val_s, val_t))
            if not math.isfinite(val_rmse):
                raise FloatingPointError(f"validation RMSE is {val_rmse} at epoch {int(state['epoch']) + 1}")
            state.update(params=params, opt_state=opt_state, key=np.asarray(jax.random.key_data(key)), epoch=np.asarray(int(state["epoch"]) + 1))
            state = update_schedule(state, val_rmse, config)
            record = {
                "epoch": int(state["epoch"]),
                "train_rmse": float(np.sqrt(train_loss)),
                "val_rmse": val_rmse,
                "val_r2": val_r2,
                "learning_rate": float(state["learning_rate"]),
                "steps": steps,
                "wall_s": time.perf_counter() - start,
            }
            with open(run_dir / "metrics.jsonl", "a") as f:
                f.write(json.dumps(record) + "\n")
            ckpt.save(int(state["epoch"]), state)
            bar.update(1)
            bar.set_postfix(val_rmse=f"{val_rmse:.2e}", lr=f"{float(state['learning_rate']):.1e}")
    except KeyboardInterrupt:
        stop_reason = "interrupted"
        print(f"\ninterrupted: state saved after epoch {int(state['epoch'])} in {run_dir}", file=sys.stderr)
    finally:
        bar.close()
        ckpt.close()
    metrics = {"epochs": int(state["epoch"]), "stop_reason": stop_reason, "steps_per_epoch": steps, "batch_size": config.batch_size}
    for split in ("val", "test", "train"):
        rmse, r2 = evaluate(state["best_params"], *all_samples(prepared.splits[split]))
        metrics[f"{split}_rmse"], metrics[f"{split}_r2"] = float(rmse), float(r2)
    (run_dir / "final_metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return {
        "params": state["best_params"],
        "mean": prepared.mean,
        "std": prepared.std,
        "metrics": metrics,
        "splits": prepared.splits,
        "model_config": model_config,
    }


def _keep_starting_card(init_from: str, run_dir: Path) -> None:
    """A run from ``shipped:<name>`` keeps the card of the weights it started from (once, at its
    start): the package may ship other weights before this run's own are exported, and the
    exported card lists the stages behind the weights it really started from."""
    from jaxclimate.climate.weights_io import INIT_CARD, shipped_weights_dir

    kept = run_dir / INIT_CARD
    if init_from.startswith("shipped:") and not kept.exists():
        shutil.copy(shipped_weights_dir() / f"{init_from.split(':', 1)[1]}.json", kept)


def _best_params_of(run_dir: Path, like_state: dict) -> Any:
    """The best-validation weights saved in an earlier run directory of the same model."""
    from jaxclimate.checkpoint import Checkpointer

    if str(run_dir).startswith("shipped:"):  # the weights shipped with the package
        from jaxclimate.climate.weights_io import load_surrogate

        return jax.tree_util.tree_map(jnp.asarray, load_surrogate(str(run_dir).split(":", 1)[1]).params)
    if not (run_dir / "checkpoints").is_dir():
        raise ValueError(f"FitConfig.init_from: {run_dir} has no checkpoints/ (not a fit run directory)")
    ckpt = Checkpointer(run_dir / "checkpoints")
    try:
        restored = ckpt.restore_latest(like=like_state)
    finally:
        ckpt.close()
    if restored is None:
        raise ValueError(f"FitConfig.init_from: no checkpoint in {run_dir}/checkpoints")
    return restored["best_params"]


def _validation_samples(prepared: PreparedData, config: FitConfig) -> tuple[jax.Array, jax.Array]:
    s, t = all_samples(prepared.splits["val"])
    if config.val_samples is not None and config.val_samples < len(s):
        pick = np.sort(np.random.default_rng(config.split_seed + 1).choice(len(s), config.val_samples, replace=False))
        s, t = s[pick], t[pick]
    return s, t


def _check_run_config(run_dir: Path, config: FitConfig) -> None:
    path = run_dir / "fit_config.json"
    as_json = dataclasses.asdict(config)
    if path.exists():
        # Fields added after a run began take their defaults (older runs stay resumable).
        existing = {**dataclasses.asdict(FitConfig()), **json.loads(path.read_text())}
        # max_epochs may grow between runs (continue training); everything else must match.
        if {k: v for k, v in existing.items() if k != "max_epochs"} != {k: v for k, v in as_json.items() if k != "max_epochs"}:
            raise ValueError(f"{run_dir} was started with a different configuration: {existing}; use a new --run-dir")
    else:
        path.write_text(json.dumps(as_json, indent=2) + "\n")


def main(argv=None) -> int:
    p = OneLineParser(prog="python -m jaxclimate.climate.fit", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=["gru", "lstm", "tcn"], default="gru")
    p.add_argument("--data", type=Path, required=True, help="dataset folder from jaxclimate.climate.dataset")
    p.add_argument("--run-dir", type=Path, required=True, help="checkpoints and metrics (resumed if present)")
    p.add_argument("--epochs", type=int, default=250)
    p.add_argument("--steps-per-epoch", type=int, default=None)
    p.add_argument("--val-samples", type=int, default=None)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--schedule",
        choices=["plateau", "cosine"],
        default="plateau",
        help="plateau: halve on a validation plateau (the authors'); cosine: decay over --epochs",
    )
    p.add_argument("--init-from", default=None, help="start from the best weights of this earlier run dir, or shipped:<name> for the shipped weights")
    p.add_argument(
        "--extra-data", type=Path, default=None, help="a dataset folder (e.g. from jaxclimate.climate.policy_data) added to the training split only"
    )
    p.add_argument(
        "--extra-fraction",
        type=float,
        default=None,
        help="share of every batch drawn from --extra-data's scenarios, the rest from the paper's (default: uniform over both)",
    )
    p.add_argument(
        "--more-scenarios",
        type=Path,
        default=None,
        help="a dataset folder of more of the paper's scenarios (dataset --first-seed 20000) added to the training split, drawn with the paper's",
    )
    p.add_argument("--time-budget", type=float, default=None, help="minutes; stop cleanly after this")
    p.add_argument(
        "--early-stop-patience",
        type=int,
        default=FitConfig.early_stop_patience,
        help=f"stop after this many epochs without a better validation RMSE (default {FitConfig.early_stop_patience}, the authors')",
    )
    p.add_argument("--stop-after-epochs", type=int, default=None, help="end after this epoch (a cosine schedule still decays over --epochs)")
    p.add_argument("--export", type=Path, default=None, help="write weights + card to this folder at the end")
    args = p.parse_args(argv)
    try:
        config = FitConfig(
            model=args.model,
            learning_rate=args.lr,
            batch_size=args.batch_size,
            max_epochs=args.epochs,
            steps_per_epoch=args.steps_per_epoch,
            val_samples=args.val_samples,
            seed=args.seed,
            schedule=args.schedule,
            early_stop_patience=args.early_stop_patience,
            init_from=None if args.init_from is None else str(args.init_from),
            extra_data=None if args.extra_data is None else str(args.extra_data),
            extra_fraction=args.extra_fraction,
            more_scenarios=None if args.more_scenarios is None else str(args.more_scenarios),
        )
        data = ds.load_dataset(args.data)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    budget = None if args.time_budget is None else 60 * args.time_budget
    try:
        result = fit(data, config, args.run_dir, time_budget_s=budget, stop_after_epochs=args.stop_after_epochs)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result["metrics"], indent=2))
    if args.export is not None:
        from jaxclimate.climate.weights_io import save_surrogate, write_weights_readme

        path = save_surrogate(args.export, args.model, result, data["manifest"], config)
        write_weights_readme(args.export)
        print(f"exported {path}")
    return 0


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    sys.exit(guarded(main, "python -m jaxclimate.climate.fit"))
