"""Saving and loading trained surrogates: ``{name}.msgpack`` (Flax parameters) beside
``{name}.json`` (architecture, normalisation μ/σ, metrics and the dataset card).

The shipped weights live in ``jaxclimate/climate/weights/`` and load with
``load_surrogate("gru")`` on a fresh install, without regenerating any data.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import jax
import numpy as np
from flax import serialization

from jaxclimate._io import atomic_write_bytes
from jaxclimate.climate import cicero
from jaxclimate.climate import surrogate as sg
from jaxclimate.core.precision import at_physics_precision


@dataclasses.dataclass(frozen=True)
class Surrogate:
    """A trained surrogate: ``config``, ``params``, input normalisation, and its card."""

    config: sg.SurrogateConfig
    params: Any
    mean: np.ndarray  # (5,)
    std: np.ndarray  # (5,)
    card: dict

    @at_physics_precision
    def predict(self, windows: jax.Array) -> jax.Array:
        """Raw-unit windows (..., W+1, 5) -> dT_glob_air (K)."""
        return _predict(self.config, self.params, self.mean.astype(np.float32), self.std.astype(np.float32), windows)


@functools.partial(jax.jit, static_argnums=0)
def _predict(config: sg.SurrogateConfig, params: Any, mean: jax.Array, std: jax.Array, windows: jax.Array) -> jax.Array:
    # compiled: run eagerly, flax's module dispatches op by op (about 1 s per call on a CPU,
    # against 0.35 s to compile once), and every climate game made computes one prediction
    return sg.build_model(config).apply({"params": params}, sg.normalise(windows, mean, std))


#: in a fit run started from ``shipped:<name>``, the card of the weights it started from
INIT_CARD = "init_card.json"


def shipped_weights_dir() -> Path:
    return Path(str(resources.files("jaxclimate.climate").joinpath("weights")))


def save_surrogate(directory: str | Path, name: str, result: dict, manifest: dict, fit_config: Any) -> Path:
    """Write ``result`` of ``fit.fit`` as ``{name}.msgpack`` + ``{name}.json`` (atomically)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    params = jax.tree_util.tree_map(np.asarray, result["params"])
    splits = result["splits"]
    card = {
        "name": name,
        "architecture": result["model_config"].to_dict(),
        "num_params": sg.count_params(params),
        "normalisation": {
            "mean": np.asarray(result["mean"]).tolist(),
            "std": np.asarray(result["std"]).tolist(),
            "gases": list(cicero.CONTROLLABLE),
            "units": list(cicero.CONTROLLABLE_UNITS),
        },
        "metrics": result["metrics"],
        "dataset": {
            "num_scenarios": manifest["num_scenarios"],
            "seeds": manifest["seeds"],
            "generator": manifest["generator"],
            "oracle": manifest["oracle"],
            "split": {k: int(len(v)) for k, v in splits.items()},
            "split_rule": "numpy.random.default_rng(split_seed).permutation(S): first 15 % test, next 15 % val, rest train",
            "window": result["model_config"].window,
            "samples_per_scenario": 61,
        },
        "training": dataclasses.asdict(fit_config),
        "notes": "",
        "regenerate": [_dataset_command(manifest)],
    }
    defaults = dataclasses.asdict(type(fit_config)())
    card.update(chain_fields(dataclasses.asdict(fit_config), defaults, result["metrics"]["epochs"], card["regenerate"]))
    atomic_write_bytes(directory / f"{name}.msgpack", serialization.msgpack_serialize(params))
    atomic_write_bytes(directory / f"{name}.json", (json.dumps(card, indent=2) + "\n").encode())
    return directory / f"{name}.json"


def chain_fields(training: dict, defaults: dict, epochs_run: int, data_commands: list[str]) -> dict:
    """A card's ``earlier_training``, ``extra_data_commands`` and ``regenerate`` (after
    ``data_commands``, which make the paper's scenarios) for weights fitted with ``training``."""
    stages, start_card = _training_chain(training, defaults, epochs_run)
    extras = _extra_data_commands(stages, start_card)
    regenerate = [*data_commands, *(command for _, commands in extras.values() for command in commands)]
    regenerate += [
        _fit_command(
            cfg,
            defaults,
            epochs,
            run_dir=f"RUN{i}" if i < len(stages) - 1 else "RUN",
            init_from=f"RUN{i - 1}" if i else None,
            export="jaxclimate/climate/weights" if i == len(stages) - 1 else None,
            extra=extras[cfg["extra_data"]][0] if cfg.get("extra_data") else None,
            more=extras[cfg["more_scenarios"]][0] if cfg.get("more_scenarios") else None,
        )
        for i, (cfg, epochs) in enumerate(stages)
    ]
    return {
        # the runs these weights were fine-tuned from, each with the epochs it ran
        "earlier_training": [{**cfg, "epochs_run": epochs} for cfg, epochs in stages[:-1]],
        "extra_data_commands": [commands for _, commands in extras.values()],
        "regenerate": regenerate,
    }


def load_surrogate(name: str = "gru", directory: str | Path | None = None) -> Surrogate:
    """Load ``{name}.msgpack``/``{name}.json`` (default: the shipped weights) and check that
    the parameters fit the recorded architecture."""
    directory = shipped_weights_dir() if directory is None else Path(directory)
    card_path, weights_path = directory / f"{name}.json", directory / f"{name}.msgpack"
    if not card_path.exists() or not weights_path.exists():
        available = sorted(p.stem for p in directory.glob("*.json"))
        raise FileNotFoundError(f"no surrogate {name!r} in {directory} (available: {available})")
    card = json.loads(card_path.read_text())
    config = sg.SurrogateConfig(**card["architecture"])
    params = serialization.msgpack_restore(weights_path.read_bytes())
    # the architecture's shapes only: initialising the weights ran ~90 eager programs (3 s on a CPU)
    expected = jax.eval_shape(lambda key: sg.init_params(config, key), jax.random.PRNGKey(0))
    _check_matches(expected, params, f"{weights_path} does not match the architecture {config}")
    norm = card["normalisation"]
    mean, std = np.asarray(norm["mean"], np.float64), np.asarray(norm["std"], np.float64)
    if mean.shape != (5,) or std.shape != (5,) or np.any(std <= 0):
        raise ValueError(f"{card_path}: normalisation must hold 5 means and 5 positive standard deviations")
    return Surrogate(config, jax.tree_util.tree_map(np.asarray, params), mean, std, card)


def _check_matches(expected: Any, got: Any, message: str) -> None:
    exp_paths = {jax.tree_util.keystr(k): np.shape(v) for k, v in jax.tree_util.tree_leaves_with_path(expected)}
    got_paths = {jax.tree_util.keystr(k): np.shape(v) for k, v in jax.tree_util.tree_leaves_with_path(got)}
    if exp_paths != got_paths:
        missing = sorted(set(exp_paths) - set(got_paths))[:3]
        extra = sorted(set(got_paths) - set(exp_paths))[:3]
        wrong = sorted(k for k in set(exp_paths) & set(got_paths) if exp_paths[k] != got_paths[k])[:3]
        raise ValueError(f"{message}: missing {missing}, unexpected {extra}, wrong shapes {wrong}")


def _training_chain(config: dict, defaults: dict, epochs_run: int) -> tuple[list[tuple[dict, int]], dict | None]:
    """([(fit config dict, epochs)] from the first run to this one, the card of the shipped
    weights the chain starts from or None), following ``init_from`` through the earlier run
    directories' ``fit_config.json``/``final_metrics.json`` (fields an older run did not record
    take their defaults). A run started from ``shipped:<name>`` keeps the card it started from
    (``init_card.json``, written by ``fit``): the package may ship other weights since."""
    stages, run, seen = [(config, int(epochs_run))], None, set()
    while stages[0][0].get("init_from") and stages[0][0]["init_from"] not in seen:
        seen.add(stages[0][0]["init_from"])
        if stages[0][0]["init_from"].startswith("shipped:"):  # the shipped card records its own stages
            card = _starting_card(run, stages[0][0]["init_from"].split(":", 1)[1])
            stages[:0] = _card_stages(card, defaults)
            return stages, card
        run = Path(stages[0][0]["init_from"])
        try:
            cfg = {**defaults, **json.loads((run / "fit_config.json").read_text())}
            epochs = _epochs_run(run)
        except (OSError, ValueError, KeyError):
            break  # the earlier run is gone: the card keeps what is known
        stages.insert(0, (cfg, int(epochs)))
    return stages, None


def _starting_card(run: Path | None, name: str) -> dict:
    """The card of the shipped weights ``name`` as ``run`` started from them (None: this run)."""
    kept = None if run is None else run / INIT_CARD
    path = kept if kept is not None and kept.exists() else shipped_weights_dir() / f"{name}.json"
    return json.loads(path.read_text())


def _epochs_run(run: Path) -> int:
    """Epochs an earlier run ran: its final metrics, or where it has none (a run that goes on
    in the background, stopped where its best weights were taken) its per-epoch lines."""
    if (run / "final_metrics.json").exists():
        return int(json.loads((run / "final_metrics.json").read_text())["epochs"])
    return sum(1 for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip())


def _extra_data_commands(stages: list[tuple[dict, int]], start_card: dict | None = None) -> dict[str, tuple[str, list[str]]]:
    """Each extra training set the stages used, in order -> (its name in the commands: EXTRA,
    EXTRA2, ...; the commands that make it). A folder that is gone (an earlier session's) takes
    the commands ``start_card`` (the shipped card the chain starts from) recorded for it, in order."""
    folders = list(dict.fromkeys(cfg[key] for cfg, _ in stages for key in ("more_scenarios", "extra_data") if cfg.get(key)))
    recorded = _recorded_extra_commands(start_card)
    out: dict[str, tuple[str, list[str]]] = {}
    made: dict[tuple[str, ...], str] = {}  # the sets made so far, by their commands without the output folder
    for i, folder in enumerate(folders):
        name = "EXTRA" if i == 0 else f"EXTRA{i + 1}"
        commands = _extra_set_commands(Path(folder), name, made)
        if commands is None:
            commands = (
                [_renamed_output(c, name) for c in recorded[i]] if i < len(recorded) else [f"python -m jaxclimate.climate.policy_data --out {name}"]
            )
        made[_unnamed(commands)] = name
        out[folder] = (name, commands)
    return out


def _unnamed(commands: list[str]) -> tuple[str, ...]:
    """``commands`` with their output folder left out, so two sets made alike compare equal."""
    return tuple(_renamed_output(c, "OUT") for c in commands)


def _recorded_extra_commands(card: dict | None) -> list[list[str]]:
    """A card's extra data commands; cards written before ``extra_data_commands`` existed give
    their one ``policy_data`` line."""
    if card is None:
        return []
    if "extra_data_commands" in card:
        return card["extra_data_commands"]
    return [[line] for line in card.get("regenerate", []) if line.startswith("python -m jaxclimate.climate.policy_data")]


def _renamed_output(command: str, name: str) -> str:
    """``command`` writing its output to ``name``."""
    return re.sub(r"--out \S+", f"--out {name}", command)


def _card_stages(card: dict, defaults: dict) -> list[tuple[dict, int]]:
    """[(fit config dict, epochs)] of the weights a card describes."""
    earlier = [({**defaults, **cfg}, int(cfg.get("epochs_run", cfg["max_epochs"]))) for cfg in card.get("earlier_training", [])]
    return earlier + [({**defaults, **card["training"]}, int(card["metrics"]["epochs"]))]


def _dataset_command(manifest: dict, out: str = "DATA") -> str:
    engine = " --engine cicero-jax" if "cicero_jax" in str(manifest["oracle"].get("engine", "")) else ""
    first = f" --first-seed {manifest['first_seed']}" if manifest.get("first_seed") else ""
    return f"python -m jaxclimate.climate.dataset --scenarios {manifest['num_scenarios']}{first}{engine} --out {out}"


def _extra_set_commands(folder: Path, name: str, made: dict[tuple[str, ...], str]) -> list[str] | None:
    """The commands that regenerate an extra training set as ``name``: more of the paper's
    scenarios by ``dataset --first-seed``; policy-induced paths by their trained-policy runs where
    it has them (``baselines/surrogate_long_run.py trained`` makes them under ``trained/``), then
    ``policy_data``; ``None`` where the folder is gone. ``made``: sets made before, by their
    commands without the output folder."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    return _set_commands(manifest, name, made)


def _set_commands(manifest: dict, name: str, made: dict[tuple[str, ...], str]) -> list[str]:
    if "jitter" in manifest:  # a policy-data set's paths with a jittered copy of each: that set's commands, then the jitter
        jitter = manifest["jitter"]
        low, high = jitter["bounds"]
        source = _set_commands(jitter["of_manifest"], jitter["of"], made)
        of = made.get(_unnamed(source))  # a set the chain made before: jittered by its name, not made twice
        return [
            *(source if of is None else []),
            f"python -m jaxclimate.climate.policy_data --jitter-of {of or jitter['of']} --jitter {low} {high} --seed {jitter['seed']} --out {name}",
        ]
    if "generator" in manifest:  # more scenarios of the paper's generator (dataset --first-seed), not policy paths
        return [_dataset_command(manifest, name)]
    trained = [label.split(": ", 1)[1] for label in manifest.get("trained", {})]
    command = (
        f"python -m jaxclimate.climate.policy_data --seed {manifest['seed']} "
        f"--episodes {manifest['episodes_per_source']} --scenarios {' '.join(manifest['scenarios'])} "
        f"--policies {' '.join(manifest['policies'])} --out {name}"
    )
    if not trained:
        return [command]
    runs = "python baselines/surrogate_long_run.py trained  # the IPPO runs whose visited episodes join, under trained/"
    return [runs, command + " --trajectories " + " ".join(f"trained/{run}/trajectories.npz" for run in trained)]


def _fit_command(
    cfg: dict, defaults: dict, epochs: int, run_dir: str, init_from: str | None, export: str | None, extra: str | None = None, more: str | None = None
) -> str:
    """The ``fit`` command line that reproduces one training stage (flags only where ``cfg``
    differs from the ``FitConfig`` defaults)."""
    parts = [f"python -m jaxclimate.climate.fit --model {cfg['model']} --data DATA --run-dir {run_dir}"]
    if init_from:
        parts.append(f"--init-from {init_from}")
    changed = (
        ("schedule", "--schedule"),
        ("learning_rate", "--lr"),
        ("batch_size", "--batch-size"),
        ("seed", "--seed"),
        ("early_stop_patience", "--early-stop-patience"),
    )
    for key, flag in changed:
        if cfg.get(key, defaults[key]) != defaults[key]:
            parts.append(f"{flag} {cfg[key]}")
    # a cosine schedule is defined over max_epochs; a plateau run is replayed for the epochs it ran
    cosine = cfg.get("schedule") == "cosine"
    parts.append(f"--epochs {cfg['max_epochs'] if cosine else epochs}")
    if cosine and epochs < cfg["max_epochs"]:  # stopped early (time budget): stop at the same epoch
        parts.append(f"--stop-after-epochs {epochs}")
    for key, flag in (("steps_per_epoch", "--steps-per-epoch"), ("val_samples", "--val-samples")):
        if cfg.get(key) is not None:
            parts.append(f"{flag} {cfg[key]}")
    if cfg.get("extra_data"):
        parts.append(f"--extra-data {extra or 'EXTRA'}")
    if cfg.get("more_scenarios"):
        parts.append(f"--more-scenarios {more or 'EXTRA'}")
    if cfg.get("extra_fraction") is not None:
        parts.append(f"--extra-fraction {cfg['extra_fraction']}")
    if export:
        parts.append(f"--export {export}")
    return " ".join(parts)


def write_weights_readme(directory: str | Path | None = None) -> Path:
    """Regenerate ``README.md`` (the human-readable dataset/model card) from the JSON cards."""
    directory = shipped_weights_dir() if directory is None else Path(directory)
    lines = [
        "# Shipped surrogate weights",
        "",
        "Generated from the JSON cards by `jaxclimate.climate.weights_io.write_weights_readme()`.",
        "Load with `jaxclimate.climate.weights_io.load_surrogate(name)` or use",
        "`jaxclimate.climate.engines.SurrogateEngine(name)`.",
        "",
    ]
    for card_path in sorted(directory.glob("*.json")):
        card = json.loads(card_path.read_text())
        m, d, t = card["metrics"], card["dataset"], card["training"]
        lines += [
            f"## `{card['name']}` — {card['architecture']['kind'].upper()}, {card['num_params']:,} parameters",
            "",
            "| metric | value |",
            "|---|---|",
            f"| test RMSE (K) | {m['test_rmse']:.3e} |",
            f"| test R² | {m['test_r2']:.7f} |",
            f"| validation RMSE (K) | {m['val_rmse']:.3e} |",
            f"| train RMSE (K) | {m['train_rmse']:.3e} |",
            f"| epochs × steps per epoch × batch | {m['epochs']} × {m['steps_per_epoch']} × {m['batch_size']} |",
            f"| stopped by | {m['stop_reason']} |",
            "",
            f"* **Oracle:** {d['oracle']['package']} {d['oracle']['version']}, {d['oracle']['output']}; run config {d['oracle']['run_config']}.",
            f"* **Scenarios:** S = {d['num_scenarios']} (seeds {d['seeds']}), generator {d['generator']}.",
            f"* **Samples:** window W = {d['window']} years + the target year, {d['samples_per_scenario']} targets "
            f"(2015..2075) per scenario; split {d['split']} scenarios ({d['split_rule']}).",
            f"* **Normalisation:** per-gas μ = {[round(x, 6) for x in card['normalisation']['mean']]}, "
            f"σ = {[round(x, 6) for x in card['normalisation']['std']]} ({', '.join(card['normalisation']['gases'])}).",
            f"* **Training:** AdamW lr {t['learning_rate']}, weight decay {t['weight_decay']}, batch {t['batch_size']}, "
            + (
                f"cosine decay to {t['min_learning_rate']} over {t['max_epochs']} epochs"
                if t.get("schedule") == "cosine"
                else f"plateau ×{t['plateau_factor']} after {t['plateau_patience']} epochs, early stopping {t['early_stop_patience']}"
            )
            + f", steps per epoch {t['steps_per_epoch']}, validation subset {t['val_samples']}"
            + (
                f"; started from the best weights of an earlier run ({len(card.get('earlier_training', []))} stage(s) before, see Regenerate)"
                if t.get("init_from")
                else ""
            )
            + ".",
            *([f"* **Notes:** {card['notes']}"] if card.get("notes") else []),
            "* **Regenerate:**",
            "",
            "```bash",
            *card["regenerate"],
            "```",
            "",
        ]
    path = directory / "README.md"
    atomic_write_bytes(path, ("\n".join(lines)).encode())
    return path
