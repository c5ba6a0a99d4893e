"""FedRAIN-Lite's Tables B.3–B.6: federated DDPG (TD3, TQC) on the EBM environments.

    python baselines/fedrain.py                                   # DDPG, paper conditions, every row
    python baselines/fedrain.py --condition default --envs ebm-v1 ebm-v3-a6
    python baselines/fedrain.py --algos ddpg td3 tqc --seeds 10 --steps 20000

One row = one environment × one regime (fed05: FedAvg of the actors every 5 episodes, fed10:
every 10, nofed: never) trained with ``--seeds`` seeds for ``--steps`` steps — every seed and
every agent in one compiled program — then evaluated with the protocol of docs/fedrain.md §5:
one deterministic episode per seed, the profile after 200 steps, areaWRMSE per 30° band, mean
and population std over seeds, gain % against the single-agent ebm-v1 row of the same
algorithm and condition; "local" actors (each agent's own, before the final averaging) and,
for fed05/fed10, the "global" averaged one. ``--condition paper`` runs with
``ignore_albedo_actions=True`` (the published runs: albedo actions had no effect under climlab
0.8.2); ``default`` lets them act. Results go to ``baselines/results/fedrain_<algo>_<condition>.json``
(rows are added as they finish: an interrupted run continues where it stopped, and runs side
by side — one row per core, ``taskset -c N`` — add their rows to the same file), figures to
``fedrain_<algo>_<condition>.png``; the paper's numbers (``baselines/data``) are printed alongside.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxclimate._xla import use_cpu_safe_xla_flags  # noqa: E402

use_cpu_safe_xla_flags()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxclimate import make  # noqa: E402
from jaxclimate._cli import key_value  # noqa: E402
from jaxclimate._io import atomic_write_text  # noqa: E402
from jaxclimate.algos.off_policy import DDPGConfig, TD3Config, TQCConfig, local_policy, make_trainer  # noqa: E402
from jaxclimate.envs.ebm import BAND_NAMES, area_weighted_rmse_bands, static_baseline  # noqa: E402
from jaxclimate.run.values import parse_value  # noqa: E402

RESULTS = Path(__file__).parent / "results"
PAPER = json.loads((Path(__file__).parent / "data" / "fedrain_paper_tables.json").read_text())
CONFIGS = {"ddpg": DDPGConfig, "td3": TD3Config, "tqc": TQCConfig}
REGIMES = {"fed05": 5, "fed10": 10, "nofed": 0}
ENVS = ("ebm-v1", "ebm-v2-a2", "ebm-v2-a6", "ebm-v3-a2", "ebm-v3-a6")
PAPER_EXPERIMENT = {
    "ebm-v2-a2": "ebm-v2-optim-L-20k-a2",
    "ebm-v2-a6": "ebm-v2-optim-L-20k-a6",
    "ebm-v3-a2": "ebm-v3-optim-L-20k-a2",
    "ebm-v3-a6": "ebm-v3-optim-L-20k-a6",
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--algos", nargs="+", default=["ddpg"], choices=sorted(CONFIGS))
    p.add_argument("--condition", choices=["paper", "default"], default="paper")
    p.add_argument("--envs", nargs="+", default=list(ENVS), choices=list(ENVS))
    p.add_argument("--regimes", nargs="+", default=list(REGIMES), choices=list(REGIMES))
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--steps", type=int, default=20_000)
    p.add_argument("--set", action="append", default=[], type=key_value, metavar="KEY=VALUE", help="config override (quick runs)")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--no-plot", action="store_true")
    return p.parse_args(argv)


def profile_evaluator(env, params, trainer):
    """A compiled function: stacked actors (one set per seed) → the 96-point profile after
    ``params.max_steps`` steps of one deterministic episode from the reset state, (seeds, 96).
    Built once per row and used for the local and the global actors alike."""

    def one(actors_one):
        obs, state = env.reset(jax.random.PRNGKey(0), params)

        def body(carry, _):
            obs, state = carry
            actions, _ = trainer.act(actors_one, jax.tree_util.tree_map(lambda x: x[None], obs), None, None, jax.random.PRNGKey(0))
            obs, state, _, _, _, info = env.step(jax.random.PRNGKey(0), state, jax.tree_util.tree_map(lambda x: x[0], actions), params)
            return (obs, state), info["profile"]

        _, profiles = jax.lax.scan(body, (obs, state), None, int(params.max_steps))
        return profiles[-1]

    return jax.jit(jax.vmap(one))


def config_overrides(items: list[tuple[str, str]], config_cls) -> dict:
    """``--set KEY=VALUE`` pairs as typed overrides of ``config_cls``; unknown fields are an error."""
    defaults, overrides = config_cls(), {}
    for key, text in dict(items).items():
        if not hasattr(defaults, key):
            raise SystemExit(f"error: --set: {config_cls.__name__} has no field {key!r}")
        overrides[key] = parse_value(text, getattr(defaults, key))
    return overrides


def band_statistics(profiles: np.ndarray, target: np.ndarray) -> dict:
    rmse = np.asarray(area_weighted_rmse_bands(jnp.asarray(profiles), jnp.asarray(target)))  # (seeds, 6)
    return {
        "mean": rmse.mean(axis=0).tolist(),
        "std": rmse.std(axis=0).tolist(),
        "per_seed": rmse.tolist(),
        "best_seed": int(np.argmin(rmse.mean(axis=1))),
        "profiles": np.round(profiles, 4).tolist(),
    }


def train_row(env_id: str, regime: str, algo: str, condition: str, args, overrides: dict) -> dict:
    env, params = make(env_id, ignore_albedo_actions=condition == "paper")
    config = CONFIGS[algo](total_timesteps=args.steps, federation_period=REGIMES[regime], **overrides)
    trainer = make_trainer(env, params, config)
    keys = jnp.stack([jax.random.PRNGKey(seed) for seed in range(1, args.seeds + 1)])  # seeds 1..10, as the paper
    train = jax.jit(jax.vmap(lambda k: trainer.run(trainer.init(k), config.num_updates)))
    start = time.perf_counter()
    compiled = train.lower(keys).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    state, metrics = compiled(keys)
    returns = np.asarray(metrics["bands"]["episode_return"])  # (seeds, episodes, agents)
    wall = time.perf_counter() - start
    profiles_after_episode = profile_evaluator(env, params, trainer)
    row = {
        "env": env_id,
        "regime": regime,
        "algo": algo,
        "condition": condition,
        "seeds": args.seeds,
        "steps": args.steps,
        "agents": env.num_agents,
        "config_overrides": overrides,
        "compile_s": compile_s,
        "train_s": wall,
        "agent_steps_per_s": args.seeds * env.num_agents * args.steps / wall,
        "episode_return": {"first": returns[:, 0].mean(axis=0).tolist(), "last": returns[:, -1].mean(axis=0).tolist()},
        "local": band_statistics(np.asarray(profiles_after_episode(local_policy(state))), params.target),
    }
    if REGIMES[regime]:
        row["global"] = band_statistics(np.asarray(profiles_after_episode(trainer.policy(state))), params.target)
    return row


def add_gains(rows: dict) -> None:
    """Gain % of every row against the ebm-v1 row (same algorithm and condition), per band."""
    if "ebm-v1/nofed" not in rows:
        return
    reference = np.asarray(rows["ebm-v1/nofed"]["local"]["mean"])
    for row in rows.values():
        for actors in ("local", "global"):
            if actors in row:
                row[actors]["gain_pct"] = (100 * (reference - np.asarray(row[actors]["mean"])) / reference).tolist()


def paper_row(env_id: str, regime: str, algo: str) -> list | None:
    """The paper's band means for a row (bands south to north, as the tables list them)."""
    if env_id == "ebm-v1":
        table = PAPER["experiments"]["ebm-v2-optim-L-20k-a2"]["algorithms"][algo.upper()]
        return [cells["ebm-v1"]["mean"] for cells in table.values()]
    if env_id not in PAPER_EXPERIMENT:
        return None
    table = PAPER["experiments"][PAPER_EXPERIMENT[env_id]]["algorithms"][algo.upper()]
    return [cells[regime]["mean"] for cells in table.values()]


def print_rows(rows: dict, algo: str, condition: str, static: list) -> None:
    print(f"\n{algo.upper()}, {condition} conditions: areaWRMSE per band (°C), mean ± std over seeds [local actors; global after '|'] (paper)")
    print(f"{'row':>18} " + " ".join(f"{b:>20}" for b in BAND_NAMES))
    print(f"{'static climlab':>18} " + " ".join(f"{v:>20.3f}" for v in static))
    for key, row in rows.items():
        paper = paper_row(row["env"], row["regime"], algo)
        cells = []
        for b in range(6):
            cell = f"{row['local']['mean'][b]:.2f}±{row['local']['std'][b]:.2f}"
            if "global" in row:
                cell += f"|{row['global']['mean'][b]:.2f}"
            cells.append(f"{cell} ({paper[b]:.2f})" if paper else cell)
        print(f"{key:>18} " + " ".join(f"{c:>20}" for c in cells) + f"   [{row['train_s']:.0f} s]")


def plot(rows: dict, static: list, path: Path, title: str, algo: str) -> None:
    """Band errors with 95 % spreads (1.96·std/√seeds) per regime, one panel per environment,
    and a last panel with each environment's best learned profile (the best seed of its
    fed05 row, or of nofed) against the NCEP target and the static baseline. "local" actors
    (solid; the paper's tables) and the final "global" average (dotted, hollow) are both drawn,
    the paper's band means as crosses."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxclimate.envs.ebm import TARGET, physics

    envs = [e for e in ENVS if any(r["env"] == e for r in rows.values())]
    fig, axes = plt.subplots(1, len(envs) + 1, figsize=(4.2 * (len(envs) + 1), 3.8), squeeze=False)
    x = np.arange(6)
    for ax, env_id in zip(axes[0], envs):
        ax.plot(x, static, "k--", label="static climlab")
        for row in rows.values():
            if row["env"] != env_id:
                continue
            color = None
            for actors, style in (("local", "-o"), ("global", ":s")):
                if actors not in row:
                    continue
                mean, std = np.asarray(row[actors]["mean"]), np.asarray(row[actors]["std"])
                line = ax.errorbar(
                    x,
                    mean,
                    yerr=1.96 * std / np.sqrt(row["seeds"]),
                    fmt=style,
                    capsize=3,
                    color=color,
                    mfc="none" if actors == "global" else None,
                    label=f"{row['regime']} ({actors})",
                )[0]
                color = line.get_color()
            paper = paper_row(env_id, row["regime"], algo)
            if paper:
                ax.plot(x, paper, "x", ms=7, color=color, label=f"{row['regime']}, paper")
        ax.set_xticks(x, [b.replace("-", "–") for b in BAND_NAMES], rotation=35, fontsize=7)
        ax.set(title=env_id, ylabel="areaWRMSE (°C)")
        ax.legend(fontsize=7)
    ax = axes[0][-1]
    ax.plot(physics.LAT_DEG, TARGET, "k", lw=2, label="NCEP target")
    ax.plot(physics.LAT_DEG, np.asarray(static_baseline()[0]), "k--", label="static climlab")
    for env_id in envs:
        row = rows.get(f"{env_id}/fed05") or rows.get(f"{env_id}/nofed")
        stats = row and row["local"]
        if stats and "profiles" in stats:
            ax.plot(physics.LAT_DEG, stats["profiles"][stats["best_seed"]], lw=1, label=f"{env_id} {row['regime']}")
    ax.set(xlabel="latitude (°)", ylabel="°C", title="best learned profile after 200 steps")
    ax.legend(fontsize=6)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def save_row(path: Path, record: dict, key: str, row: dict) -> dict:
    """Add one finished row to the results file and return the file's record. The file is read
    again under an exclusive lock on its folder, so rows that other runs beside this one finished
    meanwhile are kept, not overwritten by this run's older copy; ``record``'s header fields win."""
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        on_disk = json.loads(path.read_text()) if path.exists() else {"rows": {}}
        merged = {**on_disk, **{k: v for k, v in record.items() if k != "rows"}}
        merged["rows"] = {**on_disk["rows"], key: row}
        add_gains(merged["rows"])
        atomic_write_text(path, json.dumps(merged, indent=1) + "\n")
    finally:
        os.close(folder)  # closing the descriptor releases the lock
    return merged


def main(argv=None) -> dict:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    static = np.asarray(static_baseline()[1]).tolist()
    records = {}
    for algo in args.algos:
        overrides = config_overrides(args.set, CONFIGS[algo])  # a bad --set fails now, not after hours of earlier rows
        path = args.out / f"fedrain_{algo}_{args.condition}.json"
        record = json.loads(path.read_text()) if path.exists() else {"algo": algo, "condition": args.condition, "rows": {}}
        record.update(static_climlab=static, device=jax.devices()[0].device_kind, jax=jax.__version__)
        for env_id in args.envs:
            for regime in ["nofed"] if env_id == "ebm-v1" else args.regimes:
                key = f"{env_id}/{regime}"
                done = record["rows"].get(key, {})
                if (done.get("seeds"), done.get("steps"), done.get("config_overrides", {})) == (args.seeds, args.steps, overrides):
                    continue  # done in an earlier (interrupted) run with the same settings
                print(f"training {algo} {key} ({args.condition}) ...", flush=True)
                record = save_row(path, record, key, train_row(env_id, regime, algo, args.condition, args, overrides))
                print(f"  {record['rows'][key]['train_s']:.0f} s ({record['rows'][key]['agent_steps_per_s']:,.0f} agent-steps/s)", flush=True)
        print_rows(record["rows"], algo, args.condition, static)
        if not args.no_plot:
            plot(
                record["rows"],
                static,
                args.out / f"fedrain_{algo}_{args.condition}.png",
                f"FedRAIN-Lite, {algo.upper()}, {args.condition} conditions: band errors, 95 % spreads over seeds",
                algo,
            )
        records[algo] = record
    return records


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/fedrain.py"))
