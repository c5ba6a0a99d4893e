"""RICE-N training throughput: our IPPO against jice's PPO (the RICE-N authors' JAX port) at
jice's own settings, env steps per second including the updates, compile apart.

    python benchmarks/bench_rice_n_training.py --jice PATH           # both, 20 regions
    python benchmarks/bench_rice_n_training.py --steps 20000 --repeats 3

jice's defaults (``train_with_jax.py`` and ``PpoTrainerParams`` on its GAIA_jax branch): 20
regions, 4 envs × 100 steps per update, 4 epochs of 4 minibatches, one actor and one critic
(MLPs 256-256, tanh / selu) shared by every region, lr 2.5e-4 annealed, gradient norm 1, γ 0.99,
GAE λ 0.95, clip 0.2. Ours matched: the same regions (the first 20), batch shape, epochs,
minibatches, 256-256 tanh networks shared by every region (IPPO adds a one-hot agent id), lr
2.5e-4, gradient norm 1, γ 0.99, λ 0.95, clip 0.2; entropy 0.01 constant (jice anneals it from
2.0). Our rows run the factored and the flat observation (1,043 features per region at 27
regions, 637 at 20: the reference's vector, where jice observes 57) and, ``--layouts compact``,
jice's feature set (46 at 20 regions; docs/rice_n.md §9.3); ``--regions 27`` adds the full
model. Each program is compiled ahead of time (``jax.jit(train).lower(key).compile()``),
its compile seconds recorded (``compile_s``, and ``compile_cpu_s``, this process's CPU
seconds, what the compile itself took on a shared core). Our rows also record the two programs
the run library compiles instead (``compile_init_s`` / ``compile_run_s`` and their CPU
seconds): ``trainer.init`` (environments reset, networks and optimiser initialised) and
``trainer.run`` of every update, the training program proper; jice's program is that part
alone: it initialises its networks op by op when its trainer is built (``build_s``, outside
its program). Each program is
run once to warm up, then timed in ``--repeats`` interleaved rounds (each round runs every
program once, so a slow spell of this shared machine hits all of them); the median is
reported, and ``× jice`` is the median over rounds of our rate / jice's in the same round
(with its quartiles). ``--profile`` compiles a short version of each program (2,000 env
steps, 5 updates, or ``--steps`` if fewer), runs it once to warm up and once under the
profiler, and reports its kernel time by kind (matmul, random numbers, network
initialisation, other; benchmarks/xla_profile.py). The initialisation is a fixed cost, so its
share of the short run is about 4× its share of an 8,000-step one; jice initialises its
networks outside its training program (0 %). jice's rows
are skipped with a note without a checkout (benchmarks/peers.py).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxclimate._xla import use_cpu_safe_xla_flags  # noqa: E402

use_cpu_safe_xla_flags()

import jax  # noqa: E402

from benchmarks.harness import compile_timed, format_table, ratio_fields, save_results, time_interleaved, xla_variant_suffix  # noqa: E402
from benchmarks.peers import JICE_ENV_VAR, import_jice, jice_root, load_jice  # noqa: E402
from benchmarks.xla_profile import KINDS, profile_by_kind  # noqa: E402

NUM_ENVS, NUM_STEPS, EPOCHS, MINIBATCHES = 4, 100, 4, 4  # jice's defaults
KEY = jax.random.PRNGKey(42)
PROFILE_STEPS = 2_000  # env steps of the profiled run (5 updates)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=40_000, help="env steps per training run (default 40,000)")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--layouts", nargs="+", default=["factored", "flat"], choices=["factored", "flat", "compact"])
    p.add_argument("--regions", type=int, nargs="+", default=[20], help="our rows' numbers of regions (first k; default 20)")
    p.add_argument("--jice", type=Path, default=None, help=f"a local checkout of jice (default ${JICE_ENV_VAR}; see benchmarks/peers.py)")
    p.add_argument(
        "--profile", action="store_true", help="one more run of each program under the profiler: kernel time by kind (matmul, random numbers, ...)"
    )
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if args.steps < NUM_ENVS * NUM_STEPS or args.repeats < 1:
        p.error(f"--steps must be >= {NUM_ENVS * NUM_STEPS} (one update) and --repeats >= 1")
    return args


def ours(layout: str, regions: int, steps: int, pieces: bool = False):
    """(train(key), env steps, settings) of our IPPO at jice's settings; ``pieces``: also the
    trainer (``init``/``run``, the two programs the run library compiles) and its config."""
    from jaxclimate import make
    from jaxclimate.algos.ippo import IPPOConfig, make_train, make_trainer

    env, params = make("rice-n", observation=layout, regions=range(regions))
    config = IPPOConfig(
        total_timesteps=steps,
        num_envs=NUM_ENVS,
        num_steps=NUM_STEPS,
        update_epochs=EPOCHS,
        num_minibatches=MINIBATCHES,
        hidden_sizes=(256, 256),
        activation="tanh",
        share_parameters=True,
        lr=2.5e-4,
        max_grad_norm=1.0,
        gamma=0.99,
        gae_lambda=0.95,
        clip_eps=0.2,
        ent_coef=0.01,
        vf_coef=0.5,
    )
    settings = {"observation_features": int(env.obs_dim), "hidden_sizes": [256, 256], "lr": 2.5e-4, "shared": True}
    result = make_train(env, params, config), config.num_updates * config.steps_per_update, settings
    return result + (make_trainer(env, params, config), config) if pieces else result


def timed(fn):
    """(fn(), wall seconds, this process's CPU seconds): on a shared core the CPU seconds are
    what the work itself took, the wall seconds that and the waits for the core."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def compile_pieces(trainer, config) -> dict:
    """Compile seconds (wall and CPU) of our two programs as the run library compiles them
    (jaxclimate/run/training.py): ``trainer.init`` (environments reset, networks and optimiser
    initialised) and ``trainer.run`` of every update from its state, the training program
    proper: what jice's program is (it initialises its networks outside it, op by op, when its
    trainer is built)."""
    init, init_s, init_cpu = timed(lambda: jax.jit(trainer.init).lower(KEY).compile())
    state = init(KEY)
    _, run_s, run_cpu = timed(lambda: jax.jit(trainer.run, static_argnums=1).lower(state, config.num_updates).compile())
    return {"compile_init_s": init_s, "compile_init_cpu_s": init_cpu, "compile_run_s": run_s, "compile_run_cpu_s": run_cpu}


def jice(root: Path, steps: int):
    """(train(key), env steps, settings) of jice's PPO with its defaults."""
    import_jice(root)
    from jice.algorithms import PpoTrainerParams, build_ppo_trainer

    params = PpoTrainerParams(
        num_envs=NUM_ENVS, total_timesteps=steps, trainer_seed=42, backend="cpu", debug=False, num_log_episodes_after_training=0
    )
    if (params.num_steps, params.update_epochs, params.num_minibatches) != (NUM_STEPS, EPOCHS, MINIBATCHES):
        raise SystemExit(f"jice's defaults changed: {params}; update this script's matched settings")
    env = load_jice(root, 20, init_gamma=params.gamma)
    settings = {"observation_features": int(env.observation_space().shape[-1]), "hidden_sizes": [256, 256], "lr": params.learning_rate}
    train, build_s, build_cpu = timed(lambda: build_ppo_trainer(env=env, trainer_params=params))
    settings |= {"build_s": build_s, "build_cpu_s": build_cpu}  # its networks initialised, op by op, outside its program
    return train, params.num_iterations * params.num_envs * params.num_steps, settings


def kernel_shares(row: dict) -> dict:
    """A row's kernel time by kind as shares of its total (for the printed table)."""
    total = row["kernel_s"]["total"]
    return (
        {k: row[k] for k in ("impl", "observation", "regions")}
        | {k: row["kernel_s"][k] / total for k in KINDS}
        | {"kernel s": total, "of wall": total / row["kernel_s"]["wall"]}
    )


def main(argv=None) -> list[dict]:
    args = parse_args(argv)
    programs = []  # (row, compiled)
    root = jice_root(args.jice)
    if root is None:
        print(f"jice: no checkout given (--jice or ${JICE_ENV_VAR}); its rows are skipped", flush=True)
    else:
        train, env_steps, settings = jice(root, args.steps)
        programs.append(({"impl": "jice", "observation": "jice (57 features)", "regions": 20, **settings, "env_steps": env_steps}, train))
    for regions in args.regions:
        for layout in args.layouts:
            train, env_steps, settings, trainer, config = ours(layout, regions, args.steps, pieces=True)
            row = {"impl": "jaxclimate", "observation": layout, "regions": regions, **settings, "env_steps": env_steps}
            programs.append((row | compile_pieces(trainer, config), train))
    rows, compiled = [], []
    for row, train in programs:
        (program, row["compile_s"]), _, row["compile_cpu_s"] = timed(lambda: compile_timed(train, KEY))
        rows.append(row)
        compiled.append(program)
        print(f"  compiled {row['impl']}, {row['observation']}, {row['regions']} regions in {row['compile_s']:.1f} s", flush=True)
    for row, runs in zip(rows, time_interleaved([(program, (KEY,)) for program in compiled], args.repeats)):
        row |= {"runs_s": runs, "median_s": statistics.median(runs), "env_steps_per_s": row["env_steps"] / statistics.median(runs)}
    if rows and rows[0]["impl"] == "jice":
        for row in rows[1:]:  # ours over jice's env-steps/s, round by round
            row |= ratio_fields(row, rows[0], "jice")
    if args.profile:  # a short run of each program: the profiler's buffer is bounded
        steps = min(args.steps, PROFILE_STEPS)
        for row in rows:
            train = jice(root, steps)[0] if row["impl"] == "jice" else ours(row["observation"], row["regions"], steps)[0]
            row["kernel_s"] = profile_by_kind(compile_timed(train, KEY)[0], KEY) | {"env_steps": steps}
    columns = [("impl", "impl", "s"), ("observation", "observation", "s"), ("regions", "regions", "d")]
    columns += [("env_steps_per_s", "env-steps/s", ",.0f"), ("compile_s", "compile s", ".1f"), ("compile_cpu_s", "CPU s", ".1f")]
    columns += [
        ("compile_run_cpu_s", "run prog. CPU s", ".1f"),
        ("compile_init_cpu_s", "init prog. CPU s", ".1f"),
        ("build_cpu_s", "build CPU s", ".1f"),
    ]
    columns += [("ratio_vs_jice", "× jice", ".2f")]
    print(format_table(rows, columns))
    if args.profile:
        print(
            format_table(
                [kernel_shares(r) for r in rows],
                [("impl", "impl", "s"), ("observation", "observation", "s"), ("regions", "regions", "d")]
                + [(k, k, ".0%") for k in KINDS]
                + [("kernel s", "kernel s", ".1f"), ("of wall", "of wall", ".0%")],
            )
        )
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    path = save_results("bench_rice_n_training" + xla_variant_suffix(), {"config": config, "rows": rows}, args.out)
    print(f"saved {path}")
    return rows


if __name__ == "__main__":
    main()
