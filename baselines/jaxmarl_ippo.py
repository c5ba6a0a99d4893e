"""JaxMARL's own IPPO baselines on jaxclimate's environments, the scripts unchanged.

JaxMARL (github.com/FLAIROx/JaxMARL) ships PureJaxRL-style IPPO scripts written against its
``MultiAgentEnv`` API. This runs two of them on every registered environment, through
:class:`jaxclimate.interfaces.JaxMARLEnv`, without editing a line of them:

* ``baselines/IPPO/ippo_ff_mpe.py`` — one ``Discrete`` action per agent (a categorical head),
  via ``discrete_actions="joint"``;
* ``baselines/IPPO/ippo_ff_mabrax.py`` — continuous actions from a Gaussian around 0, via
  ``box_actions="unit"``.

Each script is imported from a local checkout, its ``jaxmarl`` name rebound to an object whose
``make`` is ``JaxMARLEnv`` (the one thing a JaxMARL user changes: the line that builds the
environment) and its ``wandb`` to a no-op logger; its own ``make_train`` runs with its own
YAML config, only ``ENV_NAME``, ``ENV_KWARGS`` and ``TOTAL_TIMESTEPS`` set here. Where a script
cannot run on an environment (RICE-N's 57 heads, InvestESG's two kinds of agent), the record
keeps the one-line error and docs/interfaces.md §4.3 says what to use instead.

The trained policy is then evaluated on fresh episodes beside uniform random actions and the
best constant action (discrete: every joint action; continuous: the box's centre, where an
untrained Gaussian policy starts): the mean over agents of each agent's undiscounted episode
return. Needs ``pip install "jaxmarl[algs]==0.2.0"`` and a checkout of JaxMARL::

    git clone https://github.com/FLAIROx/JaxMARL /tmp/peers/jaxmarl
    python baselines/jaxmarl_ippo.py --jaxmarl /tmp/peers/jaxmarl            # every environment
    python baselines/jaxmarl_ippo.py --jaxmarl /tmp/peers/jaxmarl --envs ebm-v2-a2 --timesteps 2e5

(``$JAXCLIMATE_JAXMARL`` instead of ``--jaxmarl``.) Writes ``baselines/results/jaxmarl_ippo.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jaxclimate._io import atomic_write_text  # noqa: E402
from jaxclimate.core.registry import registered_envs  # noqa: E402
from jaxclimate.interfaces import JaxMARLEnv  # noqa: E402
from jaxclimate.interfaces.jaxmarl_env import _jaxmarl_spaces  # noqa: E402

#: Environment variable naming a local JaxMARL checkout (``--jaxmarl`` wins).
ENV_VAR = "JAXCLIMATE_JAXMARL"
#: The view each script is given: what its policy can express.
SCRIPTS = {"ippo_ff_mpe": {"discrete_actions": "joint", "infos": "per_agent"}, "ippo_ff_mabrax": {"box_actions": "unit", "infos": "per_agent"}}
#: A comparison row: the continuous script on the raw box (what a user gets without the option).
RAW_BOX_ROW = ("ippo_ff_mabrax", "ebm-v2-a2", {"infos": "per_agent"})


def jaxmarl_root(path: str | None) -> Path:
    """The JaxMARL checkout: ``path``, else ``$JAXCLIMATE_JAXMARL``; it must hold the scripts."""
    root = path or os.environ.get(ENV_VAR)
    if not root:
        raise SystemExit(f"give a JaxMARL checkout: --jaxmarl DIR or ${ENV_VAR}=DIR (git clone https://github.com/FLAIROx/JaxMARL DIR)")
    if not (Path(root) / "baselines" / "IPPO" / "ippo_ff_mpe.py").is_file():
        raise SystemExit(f"{root} holds no baselines/IPPO/ippo_ff_mpe.py: not a JaxMARL checkout")
    return Path(root)


def load_script(root: Path, name: str) -> tuple[types.ModuleType, dict]:
    """JaxMARL's script ``name`` as a module (its ``jaxmarl`` rebound to build our views, its
    ``wandb`` a no-op) and its YAML config, read as the scripts' Hydra reads it (OmegaConf:
    ``1e-3`` is a number, where plain YAML 1.1 keeps a string)."""
    from omegaconf import OmegaConf

    spec = importlib.util.spec_from_file_location(f"jaxmarl_baseline_{name}", root / "baselines" / "IPPO" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.jaxmarl = types.SimpleNamespace(make=JaxMARLEnv)
    module.wandb = types.SimpleNamespace(log=lambda *args, **kwargs: None)
    config = OmegaConf.to_container(OmegaConf.load(root / "baselines" / "IPPO" / "config" / f"{name}.yaml"))
    return module, config


def train(module: types.ModuleType, config: dict, seed: int) -> tuple[Any, np.ndarray, float]:
    """The script's own ``make_train`` → ``train(rng)``, jitted; (final train state, logged
    returns per update, seconds including compilation)."""
    key = jax.random.key(seed)
    start = time.perf_counter()
    if "rng_init" in module.make_train.__code__.co_varnames:  # ippo_ff_mabrax: make_train(config, rng_init)
        key, init = jax.random.split(key)
        run = jax.jit(module.make_train(config, init))
    else:
        run = jax.jit(module.make_train(config))
    out = jax.block_until_ready(run(key))
    seconds = time.perf_counter() - start
    logged = np.asarray(out["metrics"]["returned_episode_returns"])  # (updates,) means over steps and actors
    return out["runner_state"][0], logged, seconds


def episode_returns(view: JaxMARLEnv, act, key: jax.Array, episodes: int, steps: int) -> jax.Array:
    """Each episode's return per agent, averaged over agents: ``act(key, obs) -> actions``.
    Pure JAX (jit it, or vmap it over what ``act`` closes over)."""

    def one(key):
        k_reset, k_run = jax.random.split(key)
        obs, state = view.reset(k_reset)

        def body(carry, key):
            obs, state, total, alive = carry
            k_act, k_step = jax.random.split(key)
            obs, state, rewards, dones, _ = view.step(k_step, state, act(k_act, obs))
            total = total + alive * jnp.mean(jnp.stack([rewards[a] for a in view.agents]))
            return (obs, state, total, alive * (1.0 - dones["__all__"])), None

        (_, _, total, _), _ = jax.lax.scan(body, (obs, state, 0.0, 1.0), jax.random.split(k_run, steps))
        return total

    return jax.vmap(one)(jax.random.split(key, episodes))


def policy_actor(view: JaxMARLEnv, train_state: Any):
    """The trained network's sampled actions, per agent (one shared network, as trained)."""

    def act(key, obs):
        batch = jnp.stack([obs[a] for a in view.agents])
        pi, _ = train_state.apply_fn(train_state.params, batch)
        actions = pi.sample(seed=key)
        return {a: actions[i] for i, a in enumerate(view.agents)}

    return act


def constant_returns(view: JaxMARLEnv, key: jax.Array, episodes: int, steps: int) -> tuple[float, Any]:
    """The best constant action shared by every agent: every joint action of a ``Discrete``
    view (one program, vmapped over the actions), the centre (0) of a unit box."""
    space = view.action_space(view.agents[0])
    if hasattr(space, "n"):

        def mean_return(action):
            return episode_returns(view, lambda k, o: dict.fromkeys(view.agents, action), key, episodes, steps).mean()

        means = np.asarray(jax.jit(jax.vmap(mean_return))(jnp.arange(space.n, dtype=jnp.int32)))
        return float(means.max()), int(means.argmax())
    centre = jnp.zeros(space.shape, space.dtype)
    returns = jax.jit(lambda: episode_returns(view, lambda k, o: dict.fromkeys(view.agents, centre), key, episodes, steps))()
    return float(returns.mean()), "centre"


def run_one(root: Path, script: str, env_id: str, kwargs: dict, args: argparse.Namespace) -> dict:
    """One script on one environment: trained, evaluated, or the error that stopped it."""
    row: dict[str, Any] = {"script": f"baselines/IPPO/{script}.py", "env": env_id, "view": kwargs}
    module, config = load_script(root, script)
    config.update(ENV_NAME=env_id, ENV_KWARGS=dict(kwargs), TOTAL_TIMESTEPS=int(args.timesteps), SEED=args.seed)
    try:
        view = JaxMARLEnv(env_id, **kwargs)
        train_state, logged, seconds = train(module, config, args.seed)
    except Exception as err:  # noqa: BLE001 - the record keeps why a script cannot run here
        row.update(status="refused", error=f"{type(err).__name__}: {str(err).splitlines()[0]}")
        print(f"  {script} on {env_id}: {row['error']}", flush=True)
        return row
    steps = int(view.env.default_params.max_steps) if hasattr(view.env.default_params, "max_steps") else 500
    key = jax.random.key(args.seed + 1)
    actor = policy_actor(view, train_state)
    trained = np.asarray(jax.jit(lambda k: episode_returns(view, actor, k, args.episodes, steps))(key))
    random = np.asarray(jax.jit(lambda k: episode_returns(view, lambda k, o: view.sample_actions(k), k, args.episodes, steps))(key))
    constant, which = constant_returns(view, key, args.episodes, steps)
    tenth = max(1, len(logged) // 10)
    row.update(
        status="ran",
        updates=len(logged),
        env_steps=int(config["NUM_UPDATES"] * config["NUM_STEPS"] * config["NUM_ENVS"]),
        seconds=round(seconds, 1),
        logged_return_first=float(logged[:tenth].mean()),
        logged_return_last=float(logged[-tenth:].mean()),
        trained_return=float(trained.mean()),
        trained_return_se=float(trained.std(ddof=1) / np.sqrt(len(trained))),
        random_return=float(random.mean()),
        constant_return=constant,
        constant_action=which,
    )
    print(
        f"  {script} on {env_id}: trained {row['trained_return']:.4g} ± {row['trained_return_se']:.2g}, random {row['random_return']:.4g}, "
        f"best constant {constant:.4g} ({row['env_steps']:,} env steps, {seconds:.0f} s)",
        flush=True,
    )
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jaxmarl", help=f"a JaxMARL checkout (default ${ENV_VAR})")
    parser.add_argument("--envs", nargs="+", default=registered_envs(), help="environment ids (default: every registered one)")
    parser.add_argument("--timesteps", type=float, default=1e6, help="TOTAL_TIMESTEPS of each run (the scripts' configs say 1e7)")
    parser.add_argument("--episodes", type=int, default=64, help="evaluation episodes per policy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(ROOT / "baselines" / "results" / "jaxmarl_ippo.json"))
    args = parser.parse_args(argv)
    root = jaxmarl_root(args.jaxmarl)
    if _jaxmarl_spaces() is None:
        raise SystemExit('JaxMARL\'s scripts need the jaxmarl package: pip install "jaxmarl[algs]==0.2.0"')
    jobs = [(script, env_id, view) for env_id in args.envs for script, view in SCRIPTS.items()]
    if RAW_BOX_ROW[1] in args.envs:
        jobs.append(RAW_BOX_ROW)
    rows = [run_one(root, *job, args) for job in jobs]
    record = {
        "what": "JaxMARL's own IPPO scripts (unchanged) on jaxclimate's environments through JaxMARLEnv; returns are per agent, undiscounted, mean over agents",
        "command": "python baselines/jaxmarl_ippo.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "jaxmarl_commit": _commit(root),
        "jaxmarl_version": _version("jaxmarl"),
        "jax": jax.__version__,
        "device": jax.devices()[0].device_kind,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "timesteps": args.timesteps,
        "episodes": args.episodes,
        "seed": args.seed,
        "rows": rows,
    }
    atomic_write_text(args.out, json.dumps(record, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


def _commit(root: Path) -> str | None:
    try:
        return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/jaxmarl_ippo.py"))
