"""RICE-N baseline (paper §6, Fig. 2): IPPO with one policy shared by all 27 regions, trained
without negotiation and with the bilateral protocol, then evaluated on the climate and
economic indices with the hypervolume of the resulting points.

    python baselines/rice_n.py                       # both protocols, 3 seeds, defaults below
    python baselines/rice_n.py --steps 200000 --hidden 256 --out rice_n_200k.json   # other settings: own --out
    python baselines/rice_n.py --climate cicero-jax --out baselines/results/rice_n_cicero_jax.json
    python baselines/rice_n.py --protocols bilateral --merge   # retrain one row, keep the record's others

Setting (as the reference's baseline, docs/rice_n.md §12, where the CPU budget allows): one shared MLP
(the observation carries the region one-hot; IPPO adds an agent id), one categorical head per
action entry, masks applied to the logits (masked levels get −1e9), γ = 0.92 per env step
(so with negotiation 0.92³ per 5-year step), every head sampled and scored at every step
(``--mask-ignored-heads`` instead scores only the heads the stage reads, docs/rice_n.md §17;
``--observation factored`` trains on the factored layout, see ``jaxclimate.core.factored``). 3 seeds
are ``vmap``ped in one compiled program, laid over every device (on a multi-core CPU, XLA host
devices: ``XLA_FLAGS="--xla_force_host_platform_device_count=2 ..." ... --seeds 4``). Evaluation: 10 roll-outs of the stochastic policy
per seed (the paper's "10 roll-outs under 3 seeds"); each seed's point is the mean unrounded
(climate, economic) index of its roll-outs; the competition's eight metrics (docs/rice_n.md §18)
of every roll-out, averaged as its script averages episodes, over all seeds and per seed; we report the points, their Pareto front's
hypervolume (reference point (0, 0), docs/rice_n.md §11.4), the mean ΔT 2015→2100 / 2115 and each
seed's mean T_AT path 2015..2115 (``temperature_path`` by ``years``; its 2100 entry is
``temperature_2100``). The paper's Fig. 2 finds that negotiation lowers the 2100 temperature.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxclimate._xla import use_cpu_safe_xla_flags  # noqa: E402

use_cpu_safe_xla_flags()  # jit(vmap(train)) over seeds can deadlock on XLA:CPU otherwise

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxclimate import distributed, make  # noqa: E402
from jaxclimate._io import atomic_write_text  # noqa: E402
from jaxclimate.algos.ippo import IPPOConfig, make_trainer  # noqa: E402
from jaxclimate.envs.rice_n import evaluation as ev  # noqa: E402
from jaxclimate.envs.rice_n import scoring  # noqa: E402

RESULTS = Path(__file__).parent / "results"
#: The records' T_AT = RICE-N's anchor T_AT(2015) = 0.85 °C + ΔT since 2015 (as temperature_2100 always was).
T_AT_2015 = 0.85
#: The settings every row of one record shares (a --merge must not mix rows trained otherwise).
SETTINGS = ("steps", "envs", "seeds", "rollouts", "hidden", "lr", "ent_coef", "seed", "mask_ignored_heads", "observation", "climate")


def make_env(protocol: str, args):
    return make("rice-n", protocol=protocol, mask_ignored_heads=args.mask_ignored_heads, observation=args.observation, climate=args.climate)


def ippo_config(env, args) -> IPPOConfig:
    return IPPOConfig(
        total_timesteps=args.steps,
        num_envs=args.envs,
        num_steps=env.episode_length,
        update_epochs=4,
        num_minibatches=4,
        gamma=0.92,
        gae_lambda=0.95,
        lr=args.lr,
        ent_coef=args.ent_coef,
        vf_coef=0.5,
        network="mlp",
        hidden_size=args.hidden,
        share_parameters=True,  # MLP: no recurrent carry in ``act``
    )


def train_protocol(protocol: str, args) -> dict:
    env, params = make_env(protocol, args)
    config = ippo_config(env, args)
    trainer = make_trainer(env, params, config)

    def train(rng):
        rs = trainer.init(rng)
        return trainer.run(rs, config.num_updates)

    # the seeds over every device (XLA host devices on a multi-core CPU: one per core)
    placement = distributed.RunPlacement.over_devices(args.seeds)
    keys = np.asarray(jax.random.split(jax.random.PRNGKey(args.seed), args.seeds))
    start = time.perf_counter()
    rs, metrics = placement.to_host(placement.compile(train)(placement.from_host(keys)))
    wall = time.perf_counter() - start
    returns = np.asarray(metrics["regions"]["episode_return"]).mean(axis=-1)  # (seeds, updates)
    evaluation = evaluate(env, params, trainer, rs.params, args)
    return {
        "protocol": env.protocol.name,
        "protocol_spec": protocol,
        "env_steps_per_seed": config.num_updates * config.steps_per_update,
        "wall_seconds": wall,
        "devices": placement.num_devices,
        "env_steps_per_s_incl_updates": args.seeds * config.num_updates * config.steps_per_update / wall,
        "config": {k: getattr(config, k) for k in ("num_envs", "num_steps", "lr", "ent_coef", "gamma", "hidden_size")},
        "mean_episode_return_first_update": returns[:, 0].tolist(),
        "mean_episode_return_last_update": returns[:, -1].tolist(),
        **evaluation,
    }


def evaluate(env, params, trainer, policy_params, args) -> dict:
    """10 stochastic roll-outs per seed -> per-seed mean indices, hypervolume, temperatures."""

    def rollouts(p, keys):
        def policy(k, obs, mask):
            batched = jax.tree_util.tree_map(lambda x: x[None], obs)  # flat or factored
            actions, _ = trainer.act(
                p, {"regions": batched}, {"regions": None}, jnp.zeros((1,), bool), k, deterministic=False, mask={"regions": mask[None]}
            )
            return actions["regions"][0]

        return ev.rollout_arrays(env, params, policy, keys)

    keys = jax.random.split(jax.random.PRNGKey(10_000 + args.seed), args.seeds * args.rollouts).reshape(args.seeds, args.rollouts, -1)
    histories = jax.tree_util.tree_map(np.asarray, jax.jit(jax.vmap(rollouts))(policy_params, keys))
    points, delta_t, delta_t_2100, paths, mu, sav, competition = [], [], [], [], [], [], []
    for seed in range(args.seeds):
        metrics, seed_paths = [], []
        competition.append(scoring.score(jax.tree_util.tree_map(lambda x: x[seed], histories)))
        for r in range(args.rollouts):
            hist = jax.tree_util.tree_map(lambda x: x[seed, r], histories)
            metrics.append(ev.episode_metrics(hist))
            seed_paths.append(ev.delta_t_path(hist))
            mu.append(float(hist["state__mitigation_rate_all_regions"][1:].mean()))
            sav.append(float(hist["state__savings_all_regions"][1:].mean()))
        points.append([float(np.mean([m["climate_index"] for m in metrics])), float(np.mean([m["economic_index"] for m in metrics]))])
        delta_t.append(float(np.mean([m["delta_t"] for m in metrics])))
        delta_t_2100.append(float(np.mean([m["delta_t_2100"] for m in metrics])))
        # per year the mean of a 1-D column, as delta_t_2100's: its 2100 entry equals temperature_2100 to the bit
        seed_paths = np.asarray(seed_paths)
        paths.append([T_AT_2015 + float(np.mean(np.ascontiguousarray(seed_paths[:, k]))) for k in range(seed_paths.shape[1])])
    return {
        "points": points,
        "hypervolume": ev.hypervolume(points),
        "delta_t_2115": delta_t,
        "delta_t_2100": delta_t_2100,
        "temperature_2100": [T_AT_2015 + d for d in delta_t_2100],
        "years": [2015 + 5 * k for k in range(len(paths[0]))],
        "temperature_path": paths,
        "mean_mitigation": float(np.mean(mu)),
        "mean_savings": float(np.mean(sav)),
        "competition": scoring.score(jax.tree_util.tree_map(lambda x: x.reshape(-1, *x.shape[2:]), histories)),
        "competition_per_seed": competition,
    }


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--protocols",
        nargs="+",
        default=["none", "bilateral"],
        help="registered protocol names (none, bilateral, club) or 'package.module:Name' / 'file.py:Name' of a protocol (docs/protocols.md)",
    )
    p.add_argument("--steps", type=int, default=60_000, help="env steps per seed and protocol")
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--rollouts", type=int, default=10)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--mask-ignored-heads",
        action="store_true",
        help="docs/rice_n.md §17 stage-relevance mask: heads the next stage ignores are pinned to level 0, so they "
        "add nothing to log-probabilities and entropies (default off, as the paper's baseline)",
    )
    p.add_argument(
        "--observation",
        choices=["flat", "factored"],
        default="flat",
        help="factored: the features all regions share kept once per env in the rollout buffer and "
        "multiplied once per env by the first layer (same policy class; minibatches of whole envs)",
    )
    p.add_argument(
        "--climate",
        default="dice",
        choices=["dice", "cicero-jax", "gru"],
        help="the climate module (docs/climate_modules.md); dice is the reference's",
    )
    p.add_argument("--out", type=Path, default=RESULTS / "rice_n.json")
    p.add_argument(
        "--merge",
        action="store_true",
        help="replace only these protocols' rows in an existing --out record and keep its other rows "
        "(its settings must be these; a setting the record predates counts as its default)",
    )
    return p


def existing_record(args) -> dict | None:
    """With --merge, the record at --out, checked (before any training) to share these settings."""
    if not (args.merge and args.out.exists()):
        return None
    record = json.loads(args.out.read_text())
    defaults = parser().parse_args([])
    differ = {k: (record["config"].get(k, getattr(defaults, k)), getattr(args, k)) for k in SETTINGS}
    differ = {k: v for k, v in differ.items() if v[0] != v[1]}
    if differ:
        raise SystemExit(f"--merge: {args.out} was trained with other settings (recorded, asked): {differ}")
    return record


def payload_of(args, results: list[dict], record: dict | None) -> dict:
    """The record to write: these rows, and with --merge the record's rows of other protocols
    (keyed by protocol, in the record's order, new protocols last) and its other fields (a note)."""
    rows = {r["protocol"]: r for r in (record or {}).get("results", [])} | {r["protocol"]: r for r in results}
    config = {k: v for k, v in vars(args).items() if k != "merge"} | {"protocols": list(rows), "out": str(args.out)}
    return (record or {}) | {"config": config, "device": jax.devices()[0].device_kind, "results": list(rows.values())}


def main(argv=None) -> dict:
    p = parser()
    return run(p.parse_args(argv), p.parse_args([]))


def check_args(args, defaults: argparse.Namespace | None = None) -> None:
    """Stop with one line before any training: a setting that cannot run (each protocol's
    environment and trainer are built to check theirs), or a run with other settings than the
    defaults about to overwrite the default ``--out``, the committed record of the defaults."""
    low = [
        f"--{k.replace('_', '-')} must be >= 1, got {getattr(args, k)}"
        for k in ("steps", "envs", "seeds", "rollouts", "hidden")
        if getattr(args, k) < 1
    ]
    if low:
        raise SystemExit("; ".join(low))
    if defaults is not None and Path(args.out).resolve() == Path(defaults.out).resolve():
        changed = {k: getattr(args, k) for k in SETTINGS if getattr(args, k) != getattr(defaults, k)}
        if not args.merge and list(args.protocols) != list(defaults.protocols):
            changed["protocols"] = list(args.protocols)
        if changed:
            raise SystemExit(f"--out {defaults.out} is the committed record of the default settings; give another --out PATH for these ({changed})")
    for protocol in args.protocols:
        try:
            env, params = make_env(protocol, args)
            make_trainer(env, params, ippo_config(env, args))
        except ValueError as err:
            raise SystemExit(f"protocol {protocol!r}: {str(err).strip().splitlines()[0]}") from None


def run(args, defaults: argparse.Namespace | None = None) -> dict:
    """Train and evaluate every protocol of ``args``, write the record, print the table
    (``defaults``: the parser's, to keep a run with other settings off the default record)."""
    check_args(args, defaults)
    record = existing_record(args)
    results = []
    for protocol in args.protocols:
        print(f"training IPPO on rice-n ({protocol}), {args.seeds} seeds × {args.steps:,} env steps ...", flush=True)
        results.append(train_protocol(protocol, args))
        r = results[-1]
        print(
            f"  {r['wall_seconds']:.0f} s ({r['env_steps_per_s_incl_updates']:,.0f} env-steps/s incl. updates and compile, "
            f"{r['devices']} device(s)); return {np.mean(r['mean_episode_return_first_update']):.2f} -> "
            f"{np.mean(r['mean_episode_return_last_update']):.2f}; points {np.round(r['points'], 3).tolist()}; "
            f"HV {r['hypervolume']:.3f}; T_AT 2100 {np.mean(r['temperature_2100']):.2f} °C",
            flush=True,
        )
    payload = payload_of(args, results, record)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(payload, indent=2) + "\n")
    print(f"\n{'protocol':>10} {'seed points (climate, economic)':>48} {'HV':>6} {'T_AT 2100':>10} {'ΔT 2115':>8} {'μ':>5} {'s':>5}")
    for r in payload["results"]:
        pts = " ".join(f"({c:.2f},{e:.2f})" for c, e in r["points"])
        print(
            f"{r['protocol']:>10} {pts:>48} {r['hypervolume']:6.3f} {np.mean(r['temperature_2100']):10.2f} "
            f"{np.mean(r['delta_t_2115']):8.2f} {r['mean_mitigation']:5.2f} {r['mean_savings']:5.2f}"
        )
    print(f"saved {args.out}")
    return payload


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/rice_n.py"))
