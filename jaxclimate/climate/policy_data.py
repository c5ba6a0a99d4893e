"""Policy-induced surrogate data: the emission paths the climate game's own policies produce,
with CICERO-SCM's temperatures (in JAX, float64: the oracle's numbers to ≤ 1e-12 K).

The paper's training scenarios perturb SSP2-4.5 growth by at most ±7.5 % a year, smoothed;
policies in the game bend emissions by up to −5 %/yr per lever, switch levers on and off and
clip a country's emissions at 0 — paths the surrogate never saw, where its error grows
(docs/climate_mitigation.md §4). This module plays the game with families of policies and
stores their global emission paths in the dataset format of :mod:`jaxclimate.climate.dataset`
(``seeds``, ``emissions`` (n, 61, 5) for 2015..2075, ``dT`` (n, 176)), so they can join a
surrogate's training data (``python -m jaxclimate.climate.fit --extra-data DIR``) or serve as
held-out evaluation paths.

Policy families (each episode draws its own parameters from its key):

* ``random``: every country and lever has its own categorical distribution over the three
  levels (Dirichlet(0.5) draws: from nearly deterministic to uniform), sampled every year;
* ``scripted``: every country holds constant levels and switches to new ones at a random
  year (piecewise constant policies, e.g. "full energy effort from 2030");
* trained policies: the episodes a training run visited (``--trajectories
  RUN/trajectories.npz``, the uniform reservoir ``python -m jaxclimate.train`` keeps on the
  climate game), each file one source named ``trained: RUN``.

    python -m jaxclimate.climate.policy_data --out data/policy10k --episodes 10000
    python -m jaxclimate.climate.policy_data --out data/mixed --episodes 100 --trajectories runs/*/trajectories.npz

The 2016..2065 path of an episode (35 decisions + the 15 look-ahead years) is continued to
2075 at baseline growth (it cannot affect the earlier years) and 2015 is SSP2-4.5.

Jittered copies (``--jitter-of DIR --jitter LOW HIGH``): the game's levers move the gases
together (in scenario (i) N2O's deviations are 99.98 % explained by the other gases'), so
policy paths alone leave a surrogate free to misplace the effect of one gas against another,
and that is what misorders nearly equal returns. A jittered set holds every path of ``DIR``
and, for each, a copy multiplied from 2016 on by the paper's smoothed growth perturbation
(:mod:`jaxclimate.climate.scenarios`, Eqs. 5-9) drawn independently for every gas, with
narrower ``bounds``: data around the policy paths in every gas's own direction.

    python -m jaxclimate.climate.policy_data --jitter-of data/policy10k --jitter 0.975 1.025 --out data/policy10k_jit
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate._cli import OneLineParser
from jaxclimate._io import atomic_savez, atomic_write_text
from jaxclimate.climate import cicero

POLICIES = ("random", "scripted")
SCENARIOS = ("i", "ii")
DECISIONS, LEVELS, LEVERS = 35, 3, 4


def _random_policy(key: jax.Array, n: int):
    probs = jax.random.dirichlet(key, jnp.full((LEVELS,), 0.5), (n, LEVERS))  # (n, 4, 3)

    def act(t, k):
        return jax.random.categorical(k, jnp.log(probs + 1e-12))

    return act


def _scripted_policy(key: jax.Array, n: int):
    k1, k2, k3 = jax.random.split(key, 3)
    before = jax.random.randint(k1, (n, LEVERS), 0, LEVELS)
    after = jax.random.randint(k2, (n, LEVERS), 0, LEVELS)
    switch = jax.random.randint(k3, (n, 1), 0, DECISIONS + 1)  # DECISIONS: never switches

    def act(t, k):
        return jnp.where(t < switch, before, after)

    return act


def episode_paths(scenario: str, policy: str, key: jax.Array, episodes: int) -> np.ndarray:
    """Global controllable emissions (episodes, 50, 5) for 2016..2065 of ``policy`` episodes."""
    from jaxclimate.climate.engines import PrescribedEngine
    from jaxclimate.core.registry import make  # the game by its registered id: this layer imports no environment

    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    # Emissions depend on the actions only, and these policies ignore observations: a
    # prescribed temperature path is the cheapest engine.
    env, params = make("climate-mitigation", scenario=scenario, engine=PrescribedEngine(np.zeros(cicero.N_YEARS)))
    n = env.agents["countries"]
    make_policy = _random_policy if policy == "random" else _scripted_policy

    def episode(k):
        k_pol, k_reset, k_steps = jax.random.split(k, 3)
        act = make_policy(k_pol, n)
        _, state = env.reset(k_reset, params)

        def step(state, inputs):
            t, k_t = inputs
            k_a, k_e = jax.random.split(k_t)
            _, state, _, _, _, info = env.step(k_e, state, {"countries": act(t, k_a)}, params)
            return state, (info["global_emissions"], info["lookahead_emissions"])

        _, (emissions, lookahead) = jax.lax.scan(step, state, (jnp.arange(DECISIONS), jax.random.split(k_steps, DECISIONS)))
        return jnp.concatenate([emissions, lookahead[-1]], axis=0)  # the look-ahead of the terminal step

    return np.asarray(jax.jit(jax.vmap(episode))(jax.random.split(key, episodes)), np.float64)


def source_paths(episodes: int, *, seed: int = 0, scenarios=SCENARIOS, policies=POLICIES) -> dict[str, np.ndarray]:
    """``"scenario/policy"`` -> (episodes, 50, 5) paths, each source with its own key derived
    from ``seed`` (so a source's paths do not depend on which other sources are drawn)."""

    def key(scenario: str, policy: str) -> jax.Array:
        return jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(seed), SCENARIOS.index(scenario)), POLICIES.index(policy))

    return {f"{scenario}/{policy}": episode_paths(scenario, policy, key(scenario, policy), episodes) for scenario in scenarios for policy in policies}


def trained_paths(trajectories) -> dict[str, np.ndarray]:
    """``"trained: RUN"`` -> (episodes, 50, 5) global emission paths 2016..2065 of each
    ``RUN/trajectories.npz`` (written by ``python -m jaxclimate.train`` on the climate game)."""
    sources = {}
    for path in map(Path, trajectories):
        if not path.is_file():
            raise ValueError(f"trajectories: {path} is not a file (a run's trajectories.npz from python -m jaxclimate.train)")
        with np.load(path) as f:
            if "emissions" not in f or f["emissions"].ndim != 3 or f["emissions"].shape[1:] != (50, 5) or int(f["first_year"]) != 2016:
                raise ValueError(f"trajectories: {path} holds no (episodes, 50, 5) emission paths from 2016 (a climate-game run's trajectories.npz)")
            paths = np.asarray(f["emissions"], np.float64)
        label = f"trained: {path.parent.name}"
        if label in sources:
            raise ValueError(f"trajectories: two files of runs named {path.parent.name!r}; each run is one source")
        sources[label] = paths
    return sources


def generate(out: str | Path, episodes: int, *, scenarios=SCENARIOS, policies=POLICIES, seed: int = 0, trajectories=()) -> Path:
    """``episodes`` paths per (scenario, policy) pair, then every episode of ``trajectories``
    (:func:`trained_paths`), with their CICERO-SCM temperatures, written as one dataset chunk
    with a manifest. Regenerating with the same arguments gives the same file (keys from
    ``seed``)."""
    from jaxclimate.climate import cicero_jax

    if episodes < 0 or (episodes == 0 and not trajectories):
        raise ValueError(f"episodes must be >= 1 (or 0 with trajectories), got {episodes}")
    trained = trained_paths(trajectories)  # checked before anything is written
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    by_source = source_paths(episodes, seed=seed, scenarios=scenarios, policies=policies) if episodes else {}
    by_source.update(trained)
    sources = [label for label, paths in by_source.items() for _ in range(len(paths))]
    emissions = cicero.oracle_inputs(np.concatenate(list(by_source.values())))  # (n, 61, 5) for 2015..2075
    dT = cicero_jax.run_batch(emissions)
    n = len(emissions)
    manifest = {
        "format_version": 1,
        "num_scenarios": n,
        "seeds": f"0..{n - 1}",
        "kind": "policy-induced",
        "episodes_per_source": episodes,
        "scenarios": list(scenarios),
        "policies": list(policies),
        "seed": seed,
        "trained": {label: len(paths) for label, paths in trained.items()},
        "oracle": {"engine": "jaxclimate.climate.cicero_jax (float64)", "output": "dT_glob_air (K, raw, 1900..2075)"},
        "arrays": {
            "seeds": "(n,) int64",
            "emissions": "(n, 61, 5) float64, 2015..2075",
            "dT": "(n, 176) float64",
            "sources": "(n,) scenario/policy of each path",
        },
    }
    atomic_write_text(out / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    atomic_savez(out / "chunk_00000.npz", seeds=np.arange(n), emissions=emissions, dT=dT, sources=np.asarray(sources))
    return out


def jittered_paths(emissions: np.ndarray, seed: int, bounds: tuple[float, float]) -> np.ndarray:
    """Each (61, 5) path of 2015..2075 times Π_{s=2016..t} d(s), d the paper's smoothed growth
    multipliers (log1p smoothing, α of the paper) with raw draws U(``bounds``) from
    ``numpy.random.default_rng(seed)``, independently per path and gas; 2015 is left as it was
    (the paths' shared first year)."""
    from jaxclimate.climate import scenarios

    lo, hi = bounds
    if not 0 < lo <= 1 <= hi:
        raise ValueError(f"jitter bounds must satisfy 0 < low <= 1 <= high, got {bounds}")
    emissions = np.asarray(emissions, np.float64)
    raw = np.random.default_rng(seed).uniform(lo, hi, emissions.shape)
    raw[:, 0] = 1.0  # d(2015) = 1
    d = scenarios.smooth_numpy(np.moveaxis(raw, 1, 0)).swapaxes(0, 1)  # smoothed along the years
    return scenarios.emissions_from_multipliers(d, emissions)


def generate_jittered(out: str | Path, source: str | Path, bounds: tuple[float, float], *, seed: int = 0) -> Path:
    """The paths of the policy-data set ``source`` and one jittered copy of each
    (:func:`jittered_paths` with ``seed``), with CICERO-SCM's temperatures, as one chunk."""
    from jaxclimate.climate import cicero_jax, dataset

    data = dataset.load_dataset(source)
    if data["manifest"].get("kind") != "policy-induced":
        raise ValueError(f"jitter-of: {source} is not a policy-data set (python -m jaxclimate.climate.policy_data)")
    with np.load(Path(source) / "chunk_00000.npz") as f:  # generate writes a set as this one chunk
        labels = np.asarray(f["sources"])
    copies = jittered_paths(data["emissions"], seed, bounds)
    emissions = np.concatenate([data["emissions"], copies])
    dT = np.concatenate([data["dT"], cicero_jax.run_batch(copies)])
    sources = np.concatenate([labels, np.char.add("jittered ", labels)])
    n = len(emissions)
    manifest = {
        **{k: v for k, v in data["manifest"].items() if k not in ("num_scenarios", "seeds")},
        "num_scenarios": n,
        "seeds": f"0..{n - 1}",
        "jitter": {"of": Path(source).name, "of_manifest": data["manifest"], "bounds": list(bounds), "seed": seed},
    }
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    atomic_savez(out / "chunk_00000.npz", seeds=np.arange(n), emissions=emissions, dT=dT, sources=sources)
    return out


def main(argv=None) -> int:
    p = OneLineParser(prog="python -m jaxclimate.climate.policy_data", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--episodes", type=int, default=2500, help="paths per (scenario, policy) pair")
    p.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=SCENARIOS)
    p.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--trajectories", type=Path, nargs="*", default=[], help="trained-policy episodes: RUN/trajectories.npz of python -m jaxclimate.train runs"
    )
    p.add_argument("--jitter-of", type=Path, default=None, help="a policy-data set: write its paths and a jittered copy of each (needs --jitter)")
    p.add_argument(
        "--jitter", type=float, nargs=2, default=None, metavar=("LOW", "HIGH"), help="bounds of the jitter's raw yearly multipliers, e.g. 0.975 1.025"
    )
    args = p.parse_args(argv)
    if (args.jitter_of is None) != (args.jitter is None):
        p.error("--jitter-of and --jitter go together")
    start = time.perf_counter()
    try:
        if args.jitter_of is not None:
            out = generate_jittered(args.out, args.jitter_of, tuple(args.jitter), seed=args.seed)
        else:
            out = generate(args.out, args.episodes, scenarios=args.scenarios, policies=args.policies, seed=args.seed, trajectories=args.trajectories)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    total = json.loads((out / "manifest.json").read_text())["num_scenarios"]
    print(f"{total} policy-induced paths in {args.out} ({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    sys.exit(guarded(main, "python -m jaxclimate.climate.policy_data"))
