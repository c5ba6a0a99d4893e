"""Values × seeds as one run: one training per value of an environment parameter or a
traceable hyper-parameter, all in one compiled program (``vmap`` over the run axis, laid over
every device), chunk by chunk with checkpoints like any run (:mod:`jaxclimate.run.loop`), so a
sweep survives Ctrl-C and resumes to the results of an uninterrupted one.

Its folder holds ``sweep-config.json`` (the options, the key and its values), ``checkpoints/``
and ``chunks/`` (each finished chunk's metrics), then ``sweep.json``, ``sweep.md`` and
``sweep.png``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate import distributed
from jaxclimate._io import atomic_savez, atomic_write_text
from jaxclimate.reporting import nan_mean, over_seeds
from jaxclimate.run.assemble import make_run
from jaxclimate.run.finish import progress_bar
from jaxclimate.run.loop import checked_updates, chunk_sizes, devices_record, run_chunks, stopped_early
from jaxclimate.run.values import parse_value
from jaxclimate.run_options import RunOptions

CONFIG_FILE = "sweep-config.json"

FINAL_UPDATES = 5  # the final return is the mean over this many last updates


def parse_sweep(text: str) -> tuple[str, list[str]]:
    """``"KEY=v1,v2"`` -> ``("KEY", ["v1", "v2"])`` (at least two values)."""
    key, sep, values = text.partition("=")
    items = [v.strip() for v in values.split(",") if v.strip()]
    if not sep or not key.strip() or len(items) < 2:
        raise ValueError(f"a sweep is KEY=v1,v2,... with at least two values, got {text!r}")
    return key.strip(), items


def sweep_inputs(key: str, texts: list[str], env_params: Any, config: Any) -> tuple[str, list[float], Any, Any]:
    """Where KEY lives (``"env"`` or ``"algo"``), the typed values, and the per-value
    ``EnvParams`` and hyper-parameter stacks (leading axis: values)."""
    env_fields = set(getattr(env_params, "__dataclass_fields__", {}))
    traceable = config.hyperparams() if hasattr(config, "hyperparams") else {}
    if key in env_fields:
        base = getattr(env_params, key)
        values = [parse_value(t, float(np.asarray(base).reshape(-1)[0]) if np.ndim(base) == 0 else None) for t in texts]
        stacked = [env_params.replace(**{key: jnp.full(np.shape(base), v, jnp.asarray(base).dtype)}) for v in values]
        return "env", values, jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *stacked), None
    if key in traceable:
        values = [parse_value(t, 0.0) for t in texts]
        stack = {name: jnp.full((len(values),), v, jnp.float32) for name, v in traceable.items()}
        stack[key] = jnp.asarray(values, jnp.float32)
        return "algo", values, None, stack
    raise ValueError(
        f"cannot sweep {key!r}: it is neither an EnvParams field ({sorted(env_fields)}) nor a traceable "
        f"hyper-parameter of the algorithm ({sorted(traceable) or 'none'}); other settings need separate runs"
    )


def _per_run(tree: Any, seeds: int) -> Any:
    """(values, ...) -> (values × seeds, ...), value-major."""
    return jax.tree_util.tree_map(lambda x: np.repeat(np.asarray(x), seeds, axis=0), tree)


def start_sweep(options: RunOptions, key: str, texts: list[str]) -> None:
    """Check a sweep (``ValueError`` naming what cannot be swept) and record it in its folder
    (``options.run_dir``), so that :func:`run_sweep` can start or resume it."""
    run = make_run(options)
    sweep_inputs(key, texts, run.env_params, run.config)
    out = Path(options.run_dir)
    if (out / "checkpoints").exists() and any((out / "checkpoints").iterdir()):
        raise FileExistsError(f"{out} already holds a sweep's checkpoints; continue it with --resume {out} or choose another --out")
    if distributed.is_writer():
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / CONFIG_FILE, json.dumps({"options": options.recorded(), "key": key, "values": texts}, indent=2, default=str) + "\n")


def load_sweep(out: str | Path, **session: Any) -> tuple[RunOptions, str, list[str]]:
    """The options, key and values of the sweep recorded in ``out`` (``session``: this session's flags)."""
    path = Path(out) / CONFIG_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: {out} is not a sweep's folder")
    record = json.loads(path.read_text())
    return RunOptions.from_record(record["options"], run_dir=str(out), resume=True, **session), record["key"], record["values"]


def run_sweep(options: RunOptions, key: str, texts: list[str], *, stop_after_chunks: int | None = None) -> dict[str, Any]:
    """Run (or, with ``options.resume``, continue) the sweep recorded in ``options.run_dir`` by
    :func:`start_sweep`; returns its result (``sweep.json``), or ``{"interrupted": True, …}``."""
    from jaxclimate.checkpoint import Checkpointer

    out = Path(options.run_dir)
    env, env_params, config, trainer, _ = make_run(options)
    where, values, params_stack, hp_stack = sweep_inputs(key, texts, env_params, config)
    seeds, n_values = options.seeds, len(values)
    runs = n_values * seeds
    placement = distributed.RunPlacement.over_devices(runs)
    keys = np.tile(np.asarray(jax.random.split(jax.random.PRNGKey(options.seed), seeds)), (n_values, 1))
    per_run_params = placement.from_host(_per_run(params_stack, seeds)) if where == "env" else None
    per_run_hp = placement.from_host(_per_run(hp_stack, seeds)) if where == "algo" else None
    sizes = chunk_sizes(config.num_updates, options.chunks)
    length = max(sizes)  # one program for every chunk size (they differ by one update at most)
    writer = distributed.is_writer()
    quiet = options.quiet or not writer
    if not quiet:
        print(f"sweep {key} over {values}: {n_values} values × {seeds} seeds in one program; compiling…", file=sys.stderr, flush=True)
    ckpt = Checkpointer(out / "checkpoints")
    try:
        state = placement.compile(lambda k, p: trainer.init(k, p), num_args=2)(placement.from_host(keys), per_run_params)
        done = int(ckpt.latest_step() or 0) if options.resume else 0
        if done:
            state = placement.from_host(ckpt.restore_latest(like=state))
            if not quiet:
                print(f"resuming the sweep in {out} after chunk {done}/{len(sizes)}", file=sys.stderr)
        runner = placement.compile(lambda rs, hp, p, n: checked_updates(trainer.run, rs, n, length, hp, p), num_args=3, num_shared=1)
        bar = progress_bar(
            f"sweep {key} ({n_values} values × {seeds} seeds)", config.num_updates, sum(sizes[:done]), config.steps_per_update * runs, quiet
        )
        chunks_dir = out / "chunks"
        chunks_dir.mkdir(parents=True, exist_ok=True)

        def on_chunk(chunk: int, metrics: Any) -> None:
            rows = _flat(jax.tree_util.tree_map(lambda x: x[:, : sizes[chunk]], placement.to_host(metrics)))
            if writer:  # before the chunk's checkpoint: a resumed sweep finds every checkpointed chunk's metrics
                atomic_savez(chunks_dir / f"{chunk:05d}.npz", **rows)
            bar.update(sizes[chunk] * config.steps_per_update * runs)

        wall = time.perf_counter()
        outcome = run_chunks(
            lambda rs, n: runner(rs, per_run_hp, per_run_params, placement.shared(np.int32(n))),
            state,
            sizes,
            start=done,
            on_chunk=on_chunk,
            checkpoint=ckpt,
            to_host=placement.to_host,
            checkpoint_every=1,
            stop_after_chunks=stop_after_chunks,
            run_name="run",
        )
        bar.close()
    finally:
        ckpt.close()
    early = stopped_early(outcome, len(sizes), f"python -m jaxclimate.sweep --resume {out}", writer)
    if early is not None:
        return {k: v for k, v in early.items() if k != "state"}  # the sweep's state stays in its checkpoint
    wall = time.perf_counter() - wall
    chunks = [dict(np.load(chunks_dir / f"{c:05d}.npz")) for c in range(len(sizes))]
    metrics = _nested({name: np.concatenate([c[name] for c in chunks], axis=1) for name in chunks[0]})  # (runs, updates, ...)
    result = summarize(env, key, where, values, seeds, metrics, config.steps_per_update)
    result.update(options=options.recorded(), wall_seconds_last_session=wall, devices=devices_record(placement))
    if writer:
        atomic_write_text(out / "sweep.json", json.dumps(result, indent=2) + "\n")
        atomic_write_text(out / "sweep.md", table(result) + "\n")
        if not options.no_plots:
            plot(result, out / "sweep.png")
        print(table(result))
    return result


def _flat(tree: dict, prefix: str = "") -> dict[str, np.ndarray]:
    """Nested dicts of arrays (a chunk's metrics) as ``{"group/name": array}``."""
    out = {}
    for k, v in tree.items():
        out.update(_flat(v, f"{prefix}{k}/") if isinstance(v, dict) else {f"{prefix}{k}": np.asarray(v)})
    return out


def _nested(flat: dict[str, np.ndarray]) -> dict:
    out: dict = {}
    for name, value in flat.items():
        *heads, last = name.split("/")
        node = out
        for head in heads:
            node = node.setdefault(head, {})
        node[last] = value
    return out


def summarize(env, key: str, where: str, values: list, seeds: int, metrics: dict, steps_per_update: int) -> dict:
    """Per value: final return per agent group (mean over the last updates and agents; mean and
    std over seeds), the environment's episode metrics, and the mean learning curve."""
    rows = []
    for i, value in enumerate(values):
        runs = slice(i * seeds, (i + 1) * seeds)
        row: dict[str, Any] = {"value": value, "final_return": {}, "final_return_std": {}, "curve": {}}
        for group in env.agents:
            ret = np.asarray(metrics[group]["episode_return"])[runs]  # (seeds, updates, agents)
            final = nan_mean(ret[:, -FINAL_UPDATES:], axis=(1, 2))  # NaN: an update in which no episode ended
            row["final_return"][group] = nan_mean(final)
            row["final_return_std"][group] = float(np.nanstd(final))
            row["curve"][group] = nan_mean(ret, axis=(0, 2)).tolist()
        if "episode" in metrics:
            row["episode"] = {name: float(np.mean(np.asarray(v)[runs][:, -FINAL_UPDATES:])) for name, v in metrics["episode"].items()}
        rows.append(row)
    n_updates = len(rows[0]["curve"][env.agents and next(iter(env.agents))])
    return {
        "env": env.name,
        "key": key,
        "where": where,
        "seeds": seeds,
        "groups": list(env.agents),
        "env_steps": [(u + 1) * steps_per_update for u in range(n_updates)],
        "rows": rows,
    }


def table(result: dict) -> str:
    groups = result["groups"]
    episode = sorted(result["rows"][0].get("episode", {}))
    head = [result["key"]] + [f"final return ({g})" for g in groups] + episode
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    several = result["seeds"] > 1  # a spread only where there are seeds to spread
    for row in result["rows"]:
        cells = [f"{row['value']:g}"] + [
            f"{row['final_return'][g]:.4g}" + (f" ± {row['final_return_std'][g]:.2g}" if several else "") for g in groups
        ]
        cells += [f"{row['episode'][name]:.4g}" for name in episode]
        lines.append("| " + " | ".join(cells) + " |")
    return (
        f"{result['env']}: {result['key']} ({'EnvParams' if result['where'] == 'env' else 'hyper-parameter'}), "
        + (f"{result['seeds']} seeds per value, mean ± std over seeds" if several else "one seed per value")
        + f" of the last {FINAL_UPDATES} updates\n\n"
        + "\n".join(lines)
    )


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    group = result["groups"][0]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for row in result["rows"]:
        ax1.plot(result["env_steps"], row["curve"][group], label=f"{result['key']} = {row['value']:g}")
    ax1.set(xlabel="env steps per seed", ylabel=f"mean episode return ({group})", title="learning curves")
    ax1.legend(fontsize=7)
    x = [row["value"] for row in result["rows"]]
    several = result["seeds"] > 1
    for g in result["groups"]:
        ax2.errorbar(
            x,
            [r["final_return"][g] for r in result["rows"]],
            yerr=[r["final_return_std"][g] for r in result["rows"]] if several else None,
            marker="o",
            capsize=3,
            label=g,
        )
    if min(x) > 0 and max(x) / min(x) >= 20:
        ax2.set_xscale("log")
    ax2.set(xlabel=result["key"], ylabel=f"final return ({over_seeds(result['seeds'])})", title=f"{result['env']}: outcome per value")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
