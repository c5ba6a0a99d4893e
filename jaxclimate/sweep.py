"""``python -m jaxclimate.sweep KEY=v1,v2,...``: one training per value, all in one compiled program.

KEY is a field of the environment's ``EnvParams`` (e.g. ``damage_coefficient`` of the climate
game) or a traceable hyper-parameter of the algorithm (IPPO: ``lr``, ``ent_coef``,
``vf_coef``, ``clip_eps``, ``gamma``, ``gae_lambda``). Every value trains with the same seeds
(common random numbers, so differences between values are not seed noise), and the run axis —
values × seeds — is ``vmap``ped and laid over every device (:mod:`jaxclimate.distributed`),
so the sweep compiles once. Every other option is ``python -m jaxclimate.train``'s.

Writes to ``--out``: ``sweep.json`` (per value: final return per agent group, mean and std
over seeds, the environment's episode metrics, and the learning curve), ``sweep.md`` (the
table) and ``sweep.png`` (learning curves per value; final return against the value).

    python -m jaxclimate.sweep damage_coefficient=0.002,0.004,0.008 --seeds 4 --out runs/sweep-damage
    python -m jaxclimate.sweep lr=1e-4,3e-4,1e-3 --env invest-esg --seeds 3 --out runs/sweep-lr
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from jaxclimate._xla import use_cpu_safe_xla_flags

use_cpu_safe_xla_flags()  # before JAX starts its backend (see jaxclimate/_xla.py)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxclimate import distributed, train  # noqa: E402
from jaxclimate._io import atomic_write_text  # noqa: E402
from jaxclimate.algos.base import run_up_to  # noqa: E402
from jaxclimate.reporting import nan_mean, over_seeds  # noqa: E402
from jaxclimate.run_options import RunOptions  # noqa: E402

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
        values = [train.parse_value(t, float(np.asarray(base).reshape(-1)[0]) if np.ndim(base) == 0 else None) for t in texts]
        stacked = [env_params.replace(**{key: jnp.full(np.shape(base), v, jnp.asarray(base).dtype)}) for v in values]
        return "env", values, jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *stacked), None
    if key in traceable:
        values = [train.parse_value(t, 0.0) for t in texts]
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


def run_sweep(options: RunOptions, key: str, texts: list[str], out: Path) -> dict[str, Any]:
    env, env_params, config, trainer = train.make_run(options)
    where, values, params_stack, hp_stack = sweep_inputs(key, texts, env_params, config)
    seeds, n_values = options.seeds, len(values)
    placement = distributed.RunPlacement.over_devices(n_values * seeds)
    keys = np.tile(np.asarray(jax.random.split(jax.random.PRNGKey(options.seed), seeds)), (n_values, 1))
    per_run_params = placement.from_host(_per_run(params_stack, seeds)) if where == "env" else None
    per_run_hp = placement.from_host(_per_run(hp_stack, seeds)) if where == "algo" else None

    init = placement.compile(lambda k, p: trainer.init(k, p), num_args=2)
    state = init(placement.from_host(keys), per_run_params)
    sizes = train._chunk_sizes(config.num_updates, options.chunks)
    length = max(sizes)  # one program for every chunk size (they differ by one update at most)
    runner = placement.compile(lambda rs, hp, p, n: run_up_to(trainer.run, rs, n, length, hp, p), num_args=3, num_shared=1)
    from tqdm.auto import tqdm

    bar = tqdm(
        total=config.num_updates * config.steps_per_update * seeds * n_values,
        unit="step",
        unit_scale=True,
        desc=f"sweep {key} ({n_values} values × {seeds} seeds)",
        disable=options.quiet or not distributed.is_writer(),
    )
    chunks, start = [], time.perf_counter()
    for n in sizes:
        state, metrics = runner(state, per_run_hp, per_run_params, placement.shared(np.int32(n)))
        chunks.append(jax.tree_util.tree_map(lambda x, n=n: x[:, :n], placement.to_host(metrics)))
        bar.update(n * config.steps_per_update * seeds * n_values)
    bar.close()
    wall = time.perf_counter() - start
    metrics = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs, axis=1), *chunks)  # (runs, updates, ...)
    result = summarize(env, key, where, values, seeds, metrics, config.steps_per_update)
    result.update(
        options=options.recorded(),
        wall_seconds=wall,
        devices={"count": placement.num_devices, "processes": jax.process_count(), "kind": placement.mesh.devices.flat[0].device_kind},
    )
    if distributed.is_writer():
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / "sweep.json", json.dumps(result, indent=2) + "\n")
        atomic_write_text(out / "sweep.md", table(result) + "\n")
        if not options.no_plots:
            plot(result, out / "sweep.png")
        print(table(result))
    return result


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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    train.configure_compile_cache(argv)
    train.initialize_distributed(argv)
    parser = argparse.ArgumentParser(
        prog="python -m jaxclimate.sweep",
        description=__doc__.split("\n\n")[0],
        epilog="Every other option is python -m jaxclimate.train's (see its --help).",
    )
    parser.add_argument("sweep", help="KEY=v1,v2,... (an EnvParams field or a traceable hyper-parameter)")
    parser.add_argument("--out", type=Path, required=True, help="folder for sweep.json, sweep.md, sweep.png")
    args, rest = parser.parse_known_args(argv)
    try:
        key, texts = parse_sweep(args.sweep)
    except ValueError as err:
        parser.error(str(err))
    if "--resume" in rest:
        parser.error("a sweep cannot --resume; it runs in one go")
    options = train.build_options(rest + ["--run-dir", str(args.out)])
    try:
        run_sweep(options, key, texts, args.out)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
