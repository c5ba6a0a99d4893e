"""RICE-N speed: env-steps/s for 1…4096 parallel environments, with and without negotiation,
against the original NumPy environment and, optionally, two JAX peers: the authors' port jice
and UCL DARK's pax.

    python benchmarks/bench_rice_n.py
    python benchmarks/bench_rice_n.py --envs 1 1024 --protocols none --repeats 3
    python benchmarks/bench_rice_n.py --jice /tmp/peers/jice --envs 256 4096 --protocols none \
        --variants step "step, factored" --regions 20 27   # side by side with jice (20 regions)
    python benchmarks/bench_rice_n.py --pax /tmp/peers/pax --envs 256 4096 --protocols none \
        --variants step --regions 27                      # side by side with pax (27 regions)

Rows: random valid actions (see ``rollout_checksum``), ``--episodes`` whole episodes per env
(20 env steps without negotiation, 60 with), one compiled ``lax.scan`` over steps of a
``vmap`` over envs. "step" rows time ``env.step`` (transition, auto-reset and the full
observation, 27 × 1043 / 1207 features, written to memory every step as a rollout writes it);
"step + mask" rows also write the padded (N, A, 10) action mask every step (37k entries with
negotiation; the original's step returns a flat mask of about the same size); "dynamics only"
rows time the state transition alone (no observation, no auto-reset). "factored" rows time
``env.step`` with ``observation="factored"`` (the features all regions share written once per
env, 1007 + 27 × 36 floats instead of 27 × 1043: the same information, see
``jaxclimate.core.factored``). "compact" rows time ``env.step`` with ``observation="compact"``,
jice's feature set (docs/rice_n.md §9.3: 46 floats per region at 20 regions, 53 at 27; jice
writes 57, 11 of them the state of a FaIR carbon model its step never updates), the
like-for-like rows beside jice's. At 1024 envs one step's
observations are 115 MB (112 KB per env step): writing them is bounded by memory bandwidth
(the script measures this machine's rate of one pass over an array that size and prints the
ceiling it puts on ``env.step``). Every row's program (ours and the peers') is compiled
first (compile time apart) and run once to warm up; then all are timed in ``--repeats``
interleaved rounds, each round running every program once, and each row reports its median.
A ratio to a peer is the median over rounds of the two rates in the same round: on a shared
machine a slow spell then hits both sides of a ratio alike.

Memory traffic: every row (ours and the peers') reports ``bytes_per_env_step``, what one env
step of its rollout writes — the ``observation`` carried (0 in "dynamics only" rows), the next
``state`` and the ``mask`` ("+ mask" rows) — and reads — the ``state`` it advances and the
``actions`` (the (N, heads) int32 levels; pax's float32 rates) —, from the shapes of one env's
reset (``jax.eval_shape``: nothing runs), and ``env_steps_per_s_cap``, the rate at which moving
those bytes (written + read) takes all of ``--bandwidth`` (default 4.8 TB/s, an H200's HBM3e).
On a GPU at large batch the step is bound by these bytes, so the cap predicts the GPU rows from
here (an upper bound: intermediates a fusion does not keep on chip, the per-env key and the
scan's bookkeeping are not counted); on a CPU the arithmetic binds first.

Reference: the original NumPy environment is not a dependency of this project. Its speed on
this machine class (2-vCPU AMD EPYC, Python 3.11.7, NumPy 1.26.4; env only, random actions,
median of 5 runs × 30 episodes) is quoted from the reference specification (docs/rice_n.md §16):
110 env-steps/s without negotiation and 173 env-steps/s with it. The "× original" column
divides by those numbers.

Peer: jice, the RICE-N authors' JAX port (branch GAIA_jax of their repository; 20 regions,
no negotiation, a 57-feature observation per region). Not a dependency and never vendored:
``--jice PATH`` or ``$JAXCLIMATE_JICE`` names a local checkout (benchmarks/peers.py says how
to get one and the two shims it needs); without one its rows are skipped with a note. Its
rows ("jice step") time jice's own ``Rice.step`` (transition, auto-reset and its observation,
written to memory every step; its constant all-ones action mask is not carried, as in our
"step" rows) the same way as ours: the same random-level scheme, one compiled ``lax.scan``
over steps of a ``vmap`` over envs, compile time apart, median of ``--repeats``. Each of our
rows without negotiation gets ``ratio_vs_jice``, its env-steps/s over jice's at the same
number of envs, round by round in the same run (jice has 20 regions; ``--regions 20`` makes ours comparable:
the first 20 of our 27 regions).

Peer: pax (github.com/ucl-dark/pax, ``pax/envs/rice/rice.py``; 27 regions, no negotiation).
Not a dependency and never vendored: ``--pax PATH`` or ``$JAXCLIMATE_PAX`` names a local
checkout (benchmarks/peers.py says how to get one and its three shims); without one its rows
are skipped with a note. Its rows ("pax step") time pax's own ``Rice.step`` the same way as
jice's and ours (the same random-level scheme, level ℓ played as the continuous action ℓ/10,
the value our level ℓ means; one compiled ``lax.scan`` over steps of a ``vmap`` over envs,
compile time apart, median of ``--repeats``; 20 steps an episode, as ours without
negotiation). What its step does, against our "step": the transition (its own rewrite of
the RICE-N economy, trade and DICE climate equations, not checked against ours value for
value; 57 actions per region, as ours: savings, mitigation, export limit, 27 tariffs and 27
import bids, here continuous in [0, 1] and clipped there), an auto-reset that builds a whole
reset every step (the initial state, 27 × 57 uniform draws and 27 reset observations) and
selects it where the episode ended, and its observation, a tuple of 27 vectors of 1794
float32 features (index, step, 2 temperatures, 3 carbon masses, 2 emissions, 9 public
vectors of all 27 regions, 3 own values and every region's actions just played, 27 × 57 =
1539, unnormalised) against our 27 × 1043 (a one-hot id, 8 globals, 10 public vectors, the
27 × 27 tariff matrix and 9 own values, each divided by a normaliser), carried through the
scan and so written to memory every step. No action mask (its actions
are continuous: nothing to mask; our "step" rows carry none either), no negotiation stages
(pax's club variant ``ClubRice`` is a different environment, not timed) and no per-step
info. Its reward at an episode's last step is the reset state's (zero) utility. Each of
our rows without negotiation at 27 regions gets ``ratio_vs_pax``, its env-steps/s over
pax's at the same number of envs, round by round in the same run. The JSON's name says which peers ran:
``bench_rice_n-jice-<backend>.json``, ``bench_rice_n-pax-<backend>.json`` or
``bench_rice_n-jice-pax-<backend>.json``.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxclimate._xla import use_cpu_safe_xla_flags  # noqa: E402

use_cpu_safe_xla_flags()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from benchmarks.harness import compile_timed, format_table, ratio_fields, save_results, time_compiled, time_interleaved, xla_variant_suffix  # noqa: E402
from benchmarks.peers import (  # noqa: E402
    JICE_ENV_VAR,
    PAX_ENV_VAR,
    checkout_commit,
    jice_reset,
    jice_root,
    jice_step,
    load_jice,
    load_pax,
    pax_reset,
    pax_root,
    pax_step,
)
from jaxclimate import make  # noqa: E402

#: Original NumPy RICE-N, env-steps/s on a 2-core CPU (docs/rice_n.md §16, median of 5 runs × 30 episodes).
ORIGINAL_ENV_STEPS_PER_S = {"none": 110.0, "bilateral": 173.0}


#: An H200's memory bandwidth (HBM3e, NVIDIA's figure), bytes/s: the default ``--bandwidth``.
H200_BANDWIDTH = 4.8e12

#: what is timed -> (with_mask, with_obs, observation layout) of :func:`rollout_checksum`
VARIANTS = {
    "dynamics only": (False, False, "flat"),
    "step": (False, True, "flat"),
    "step + mask": (True, True, "flat"),
    "step, factored": (False, True, "factored"),
    "step + mask, factored": (True, True, "factored"),
    "step, compact": (False, True, "compact"),
    "step + mask, compact": (True, True, "compact"),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", type=int, nargs="+", default=[1, 16, 256, 1024, 4096])
    p.add_argument("--protocols", nargs="+", default=["none", "bilateral"], choices=["none", "bilateral", "club"])
    p.add_argument(
        "--variants",
        nargs="+",
        default=list(VARIANTS),
        choices=list(VARIANTS),
        help="what is timed (default all): the dynamics alone, env.step, env.step + the padded mask",
    )
    p.add_argument(
        "--regions",
        type=int,
        nargs="+",
        default=[27],
        help="numbers of regions of our rows (default 27): k runs the first k regions, regions=range(k)",
    )
    p.add_argument("--episodes", type=int, default=1, help="whole episodes per env (default 1)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument(
        "--jice",
        type=Path,
        default=None,
        help=f"a local checkout of jice, the authors' JAX port, to time beside ours (default ${JICE_ENV_VAR}; see benchmarks/peers.py)",
    )
    p.add_argument(
        "--pax",
        type=Path,
        default=None,
        help=f"a local checkout of ucl-dark/pax, whose JAX Rice to time beside ours (default ${PAX_ENV_VAR}; see benchmarks/peers.py)",
    )
    p.add_argument(
        "--bandwidth",
        type=float,
        default=H200_BANDWIDTH / 1e12,
        help="memory bandwidth in TB/s for each row's env-steps/s cap from the bytes its step moves (default 4.8, an H200)",
    )
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if min(args.envs) < 1 or args.episodes < 1 or args.repeats < 1:
        p.error("--envs, --episodes and --repeats must be >= 1")
    if not args.bandwidth > 0:
        p.error(f"--bandwidth must be > 0 (TB/s), got {args.bandwidth}")
    if not all(2 <= k <= 27 for k in args.regions):
        p.error("--regions must be between 2 and 27")
    return args


def rollout_checksum(env, params, keys, num_steps, with_mask: bool = False, with_obs: bool = True):
    """``num_steps`` steps of ``len(keys)`` environments with random valid actions, the usual
    batched pattern: states from ``vmap(reset)`` (one per env, batched), then a ``lax.scan``
    over steps of ``vmap(step)``. The observation (and, ``with_mask``, the padded (N, A, 10)
    action mask) is carried through the scan, so every step's is written to memory as a
    rollout writes it for the policy; the checksum sums the rewards of every step and the
    last observation and mask. (Summing every step's observation instead lets XLA fuse
    building it into the sum and never write it: 2–3× faster, but no consumer works so.)

    Actions: per env, random levels drawn once; step t plays (levels + t mod 10) wrapped into
    each head's range (one add, compare and select per entry), each head's level raised to the
    lowest level the protocol allows (``env.lowest_allowed_levels``: the negotiated minimum
    mitigation). Drawing 1,539 (3,726 with negotiation) fresh random levels per env
    step with ``jax.random`` would cost more than the step itself, and an integer ``mod`` per
    entry a quarter of it; the reference measurement excludes action sampling too
    (docs/rice_n.md §16)."""
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    nvec = jnp.asarray(env.nvec)
    levels = jax.vmap(lambda k: jax.random.randint(k, (env.num_regions, nvec.size), 0, nvec))(keys)
    masks = jax.vmap(lambda s: env.action_mask("regions", s, params))
    lowest = jax.vmap(lambda s: env.lowest_allowed_levels(s, params))

    def actions_at(t, state):
        raw = levels + t % 10  # a scalar mod; per entry only an add, a compare and a select
        actions = jnp.where(nvec == 2, raw & 1, jnp.where(raw >= 10, raw - 10, raw))
        return jnp.maximum(actions, lowest(state).astype(actions.dtype))

    def body(carry, t):
        obs, mask, state, total = carry
        actions = actions_at(t, state)
        if not with_obs:  # the dynamics alone: no observation, no reset
            state, _ = jax.vmap(env.transition, in_axes=(0, 0, None))(state, actions, params)
            return (obs, mask, state, total + state.reward.sum()), None
        obs, state, rewards, *_ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(keys, state, {"regions": actions}, params)
        mask = masks(state) if with_mask else mask
        return (obs, mask, state, total + rewards["regions"].sum()), None

    mask = masks(state) if with_mask else jnp.zeros((), bool)
    (obs, mask, _, total), _ = jax.lax.scan(body, (obs, mask, state, jnp.zeros(())), jnp.arange(num_steps))
    obs_sum = sum(x.sum() for x in jax.tree_util.tree_leaves(obs["regions"]))
    return total + obs_sum + mask.sum() if with_obs else total


def batched_rollout(env, params, keys, num_steps, with_mask: bool, with_obs: bool, batch: int) -> jax.Array:
    """:func:`rollout_checksum` over ``len(keys) // batch`` sequential batches of ``batch``
    envs (one program; only one batch's rollout is on the device at a time)."""
    if batch == keys.shape[0]:
        return rollout_checksum(env, params, keys, num_steps, with_mask, with_obs)
    chunks = keys.reshape(keys.shape[0] // batch, batch, *keys.shape[1:])
    return jnp.sum(jax.lax.map(lambda k: rollout_checksum(env, params, k, num_steps, with_mask, with_obs), chunks))


def env_batch(env, params, n: int) -> int:
    """Envs per sequential batch so one batch's rollout fits the device: a rollout holds the
    carried state, observation and mask and the next step's (≈ 4× one env's reset outputs;
    65,536 envs are ~13 GB, over a 16 GB card's half)."""
    from jaxclimate.memory import split_batch, tree_bytes

    one = tree_bytes(jax.eval_shape(lambda k: env.reset(k, params), jax.random.PRNGKey(0)))
    mask = env.num_regions * len(env.nvec) * 10  # the padded (N, A, 10) boolean mask
    return split_batch(n, 4 * (one + mask))


def traffic(observation, state, mask, actions, bandwidth: float) -> dict:
    """``bytes_per_env_step`` (what one env step writes: ``observation``, ``state``, ``mask``,
    ``written`` in all; what it reads: the ``state`` it advances and the ``actions``, ``read``
    in all; ``total``) and ``env_steps_per_s_cap``, ``bandwidth`` (bytes/s) over ``total``,
    from one env's arrays or ``jax.ShapeDtypeStruct`` trees (None for what is not moved)."""
    from jaxclimate.memory import tree_bytes

    size = {k: tree_bytes(v) if v is not None else 0 for k, v in dict(observation=observation, state=state, mask=mask, actions=actions).items()}
    written = size["observation"] + size["state"] + size["mask"]
    read = size["state"] + size["actions"]
    moved = {k: size[k] for k in ("observation", "state", "mask", "actions")} | {"written": written, "read": read, "total": written + read}
    return {"bytes_per_env_step": moved, "env_steps_per_s_cap": bandwidth / moved["total"]}


def our_traffic(env, params, with_mask: bool, with_obs: bool, bandwidth: float) -> dict:
    """:func:`traffic` of our rollout's step (:func:`rollout_checksum`)."""
    obs, state = jax.eval_shape(lambda k: env.reset(k, params), jax.random.PRNGKey(0))
    heads = (env.num_regions, env.nvec.size)
    mask = jax.ShapeDtypeStruct(heads + (10,), jnp.bool_) if with_mask else None
    return traffic(obs if with_obs else None, state, mask, jax.ShapeDtypeStruct(heads, jnp.int32), bandwidth)


def rows_for(protocol: str, what: str, args, regions: int = 27) -> list[tuple[dict, Callable, jax.Array]]:
    """Our rows' jobs (row, rollout, keys) at each ``--envs``, timed later by :func:`time_jobs`."""
    with_mask, with_obs, layout = VARIANTS[what]
    env, params = make("rice-n", protocol=protocol, observation=layout, regions=range(regions))
    steps = args.episodes * env.episode_length
    moved = our_traffic(env, params, with_mask, with_obs, args.bandwidth * 1e12)
    jobs = []
    for n in args.envs:
        keys = jax.random.split(jax.random.PRNGKey(0), n)
        batch = env_batch(env, params, n)
        fn = functools.partial(batched_rollout, env, params, num_steps=steps, with_mask=with_mask, with_obs=with_obs, batch=batch)
        row = {"impl": "jaxclimate", "protocol": protocol, "what": what, "regions": regions, "n_envs": n, "batch": batch, "env_steps": n * steps}
        jobs.append((row | moved, fn, keys))
    return jobs


def time_jobs(jobs: list[tuple[dict, Callable, jax.Array]], repeats: int) -> list[dict]:
    """Compile every job's rollout (compile time apart), run each once to warm up, then time
    them in ``repeats`` interleaved rounds (``harness.time_interleaved``: each round runs every
    job once, so a slow spell of a shared machine hits every row of a round alike). Fills each
    row's times and rates; returns the rows."""
    programs = []
    for row, fn, keys in jobs:
        compiled, row["compile_s"] = compile_timed(fn, keys)
        programs.append((compiled, (keys,)))
    runs = time_interleaved(programs, repeats)
    rows = []
    for times, (row, _, _) in zip(runs, jobs):
        median = statistics.median(times)
        row |= {"median_s": median, "runs_s": times, "env_steps_per_s": row["env_steps"] / median, "us_per_env_step": 1e6 * median / row["env_steps"]}
        if row["protocol"] in ORIGINAL_ENV_STEPS_PER_S:
            row["speedup_vs_original"] = row["env_steps_per_s"] / ORIGINAL_ENV_STEPS_PER_S[row["protocol"]]
        print(
            f"  {row['protocol']:>9} {row['what']:>21} {row['regions']:>2} regions {row['n_envs']:>5} envs: {row['env_steps_per_s']:,.0f} env-steps/s",
            flush=True,
        )
        rows.append(row)
    return rows


def jice_rollout_checksum(env, keys, num_steps):
    """:func:`rollout_checksum` for jice's ``Rice`` (benchmarks/peers.py): states from
    ``vmap(reset)``, a ``lax.scan`` over steps of ``vmap(step)``, the same action scheme (every
    level is valid: jice has no negotiation), the observation features carried through the
    scan; the checksum sums every step's rewards and the last observation."""
    reset, step = jice_reset(env), jice_step(env)
    obs, state = jax.vmap(reset)(keys)
    nvec = jnp.asarray(env.action_nvec)
    levels = jax.vmap(lambda k: jax.random.randint(k, (env.num_regions, nvec.size), 0, nvec))(keys)

    def body(carry, t):
        features, state, total = carry
        raw = levels + t % 10
        actions = jnp.where(raw >= nvec, raw - nvec, raw)
        timestep, state = jax.vmap(step)(keys, state, actions)
        return (timestep.observation["observations"], state, total + timestep.reward.sum()), None

    carry = (obs["observations"], state, jnp.zeros(()))
    (features, _, total), _ = jax.lax.scan(body, carry, jnp.arange(num_steps))
    return total + features.sum()


def jice_rows(root: Path, args) -> list[tuple[dict, Callable, jax.Array]]:
    """jice's jobs (20 regions, its training settings) at each ``--envs``."""
    env = load_jice(root, num_regions=20)
    steps = args.episodes * int(env.episode_length)
    obs, state = jax.eval_shape(jice_reset(env), jax.random.PRNGKey(0))
    actions = jax.ShapeDtypeStruct((env.num_regions, len(env.action_nvec)), jnp.int32)
    moved = traffic(obs["observations"], state, None, actions, args.bandwidth * 1e12)  # its mask is not carried
    what = {"impl": "jice", "protocol": "none", "what": "jice step", "regions": env.num_regions} | moved
    return [peer_job(what, functools.partial(jice_rollout_checksum, env, num_steps=steps), n, steps) for n in args.envs]


def peer_job(what: dict, fn: Callable, n: int, steps: int) -> tuple[dict, Callable, jax.Array]:
    return what | {"n_envs": n, "batch": n, "env_steps": n * steps}, fn, jax.random.split(jax.random.PRNGKey(0), n)


def with_ratio_vs(rows: list[dict], peer_rows: list[dict], peer: str, match: tuple[str, ...]) -> list[dict]:
    """``ratio_vs_<peer>`` (and its quartiles) on each of our rows without negotiation: its
    env-steps/s over the peer's row with the same ``match`` fields (jice: the number of envs,
    at its own 20 regions; pax: regions and envs), paired round by round; no ratio where the
    peer has no such row."""
    by_key = {tuple(r[k] for k in match): r for r in peer_rows}
    for row in rows:
        key = tuple(row[k] for k in match)
        if row["protocol"] == "none" and key in by_key:
            row |= ratio_fields(row, by_key[key], peer)
    return rows


def pax_rollout_checksum(env, keys, num_steps):
    """:func:`rollout_checksum` for pax's ``Rice`` (benchmarks/peers.py): states from
    ``vmap(reset)``, a ``lax.scan`` over steps of ``vmap(step)``, the same action scheme (random
    levels 0…9 per entry drawn once, step t plays (levels + t mod 10) wrapped, as the
    continuous action level/10: every value is valid, pax has no negotiation), its tuple of
    27 observations carried through the scan; the checksum sums every step's rewards and the
    last observations."""
    reset, step = pax_reset(env), pax_step(env)
    obs, state = jax.vmap(reset)(keys)
    levels = jax.vmap(lambda k: jax.random.randint(k, (env.num_players, env.num_actions), 0, 10))(keys)

    def body(carry, t):
        obs, state, total = carry
        raw = levels + t % 10
        actions = jnp.where(raw >= 10, raw - 10, raw).astype(jnp.float32) * 0.1
        obs, state, rewards, *_ = jax.vmap(step)(keys, state, actions)
        return (obs, state, total + jnp.stack(rewards).sum()), None

    (obs, _, total), _ = jax.lax.scan(body, (obs, state, jnp.zeros(())), jnp.arange(num_steps))
    return total + sum(o.sum() for o in obs)


def pax_rows(root: Path, args) -> list[tuple[dict, Callable, jax.Array]]:
    """pax's jobs (27 regions, no mediator, 20 steps an episode) at each ``--envs``."""
    env = load_pax(root, num_regions=27)
    steps = args.episodes * int(env.episode_length)
    obs, state = jax.eval_shape(pax_reset(env), jax.random.PRNGKey(0))
    actions = jax.ShapeDtypeStruct((env.num_players, env.num_actions), jnp.float32)
    moved = traffic(obs, state, None, actions, args.bandwidth * 1e12)
    what = {"impl": "pax", "protocol": "none", "what": "pax step", "regions": env.num_players} | moved
    return [peer_job(what, functools.partial(pax_rollout_checksum, env, num_steps=steps), n, steps) for n in args.envs]


def memory_pass_rate(nbytes: float = 115e6, repeats: int = 5) -> float:
    """Bytes per second of one in-place elementwise pass (read + write) over an ``nbytes``
    float32 array, the best case for writing a batch's observations (median of ``repeats``)."""
    x = jnp.zeros((int(nbytes) // 4,), jnp.float32)
    passes = 10
    t = time_compiled(lambda y: jax.lax.fori_loop(0, passes, lambda i, z: z * 0.5 + 1.0, y), x, repeats=repeats)
    return passes * x.nbytes / t["median_s"]


def main(argv=None) -> dict:
    args = parse_args(argv)
    root = jice_root(args.jice)  # raises if a path is given but holds no jice
    pax_at = pax_root(args.pax)  # raises if a path is given but holds no pax
    print(f"bench_rice_n: {', '.join(map(str, args.regions))} regions, device {jax.devices()[0].device_kind}", flush=True)
    jobs = jice_rows(root, args) if root is not None else []
    jobs += pax_rows(pax_at, args) if pax_at is not None else []
    jobs += [
        job for regions in args.regions for protocol in args.protocols for what in args.variants for job in rows_for(protocol, what, args, regions)
    ]
    timed = time_jobs(jobs, args.repeats)
    jice = [r for r in timed if r["impl"] == "jice"]
    pax = [r for r in timed if r["impl"] == "pax"]
    rows = [r for r in timed if r["impl"] == "jaxclimate"]
    if jice:
        rows = with_ratio_vs(rows, jice, "jice", ("n_envs",))
        jice_note = f"jice from {root}"
    else:
        jice_note = f"jice rows skipped: no jice checkout given (--jice PATH or ${JICE_ENV_VAR}; see benchmarks/peers.py)"
    if pax:
        rows = with_ratio_vs(rows, pax, "pax", ("regions", "n_envs"))
        commit = checkout_commit(pax_at)
        pax_note = f"pax from {pax_at}" + (f" at commit {commit}" if commit else " (no git work tree: commit unknown)")
    else:
        pax_note = f"pax rows skipped: no pax checkout given (--pax PATH or ${PAX_ENV_VAR}; see benchmarks/peers.py)"
    print()
    print(
        format_table(
            [r | {"bytes_written": r["bytes_per_env_step"]["written"], "bytes_total": r["bytes_per_env_step"]["total"]} for r in jice + pax + rows],
            [
                ("impl", "impl", "s"),
                ("protocol", "protocol", "s"),
                ("what", "timed", "s"),
                ("regions", "N", "d"),
                ("n_envs", "envs", "d"),
                ("env_steps_per_s", "env-steps/s", ",.0f"),
                ("us_per_env_step", "µs/env-step", ".2f"),
                ("compile_s", "compile s", ".2f"),
                ("speedup_vs_original", "× original", ",.0f"),
                ("ratio_vs_jice", "× jice", ".2f"),
                ("ratio_vs_pax", "× pax", ".2f"),
                ("bytes_written", "B written", ",d"),
                ("bytes_total", "B moved", ",d"),
                ("env_steps_per_s_cap", f"cap @ {args.bandwidth:g} TB/s", ",.0f"),
            ],
        )
    )
    print(
        f"\nB written: the observation, next state and mask one env step writes; B moved: those and the state and actions it reads; "
        f"cap: env-steps/s at which moving them takes {args.bandwidth:g} TB/s (--bandwidth; 4.8 = an H200)"
    )
    print(f"\n{jice_note}\n{pax_note}")
    print(
        f"\noriginal NumPy env (docs/rice_n.md §16, same machine class): {ORIGINAL_ENV_STEPS_PER_S['none']:.0f} env-steps/s "
        f"without negotiation, {ORIGINAL_ENV_STEPS_PER_S['bilateral']:.0f} with"
    )
    rate = memory_pass_rate(repeats=args.repeats)
    env = make("rice-n")[0]
    obs_bytes = env.num_regions * env.obs_dim * 4
    ceiling = rate / obs_bytes
    print(
        f"memory: one pass over 115 MB at {rate / 1e9:.1f} GB/s; writing a {obs_bytes / 1e3:.0f} KB observation "
        f"per env step caps env.step at ~{ceiling:,.0f} env-steps/s ({ceiling / ORIGINAL_ENV_STEPS_PER_S['none']:,.0f}× the original)"
    )
    payload = {
        "config": vars(args) | {"out": str(args.out), "jice": None if root is None else str(root), "pax": None if pax_at is None else str(pax_at)},
        "rows": rows,
        "jice": {"rows": jice, "note": jice_note},
        "pax": {"rows": pax, "note": pax_note},
        "memory": {"pass_bytes_per_s": rate, "obs_bytes_per_env_step": obs_bytes, "env_steps_per_s_ceiling": ceiling},
        "reference": {
            "source": "docs/rice_n.md §16: original NumPy RICE-N on a 2-vCPU AMD EPYC, env only, random actions",
            "env_steps_per_s": ORIGINAL_ENV_STEPS_PER_S,
        },
    }
    name = "bench_rice_n" + ("-jice" if jice else "") + ("-pax" if pax else "") + xla_variant_suffix()
    path = save_results(name, payload, args.out)
    print(f"\nsaved {path}")
    return payload


if __name__ == "__main__":
    main()
