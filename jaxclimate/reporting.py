"""What the training CLI asks of an environment beyond the environment API.

``env.training_report()`` returns a :class:`TrainingReport`. The base class gives every
environment presets-free training with returns per agent; an environment package overrides
the pieces it needs (``jaxclimate/envs/<env>/report.py``):

* ``presets(env, algo)`` — named hyper-parameter sets for an algorithm (the first is the
  default), e.g. the papers' settings;
* ``recorder(env, config, options)`` / ``rollout_hook(env, config, options)`` — optional
  objects that ride inside the compiled rollout (a reservoir of episodes; scripted steps);
* ``summarize(...)`` — entries added to ``summary.json`` (and files written next to it) from
  the finished run, the metric rows and deterministic evaluation episodes;
* ``summary_lines(summary)`` — what to print after the run;
* ``plot(rows, summary, evaluations, run_dir)`` — figures beyond the returns per agent.

So the CLI never branches on an environment's name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


class TrainingReport:
    """Defaults: no presets, no recorder or hook, nothing beyond returns per agent."""

    def presets(self, env, algo: str) -> dict[str, dict[str, Any]]:
        return {}

    def recorder(self, env, config, options: dict) -> Any:
        return None

    def rollout_hook(self, env, config, options: dict) -> Any:
        rollout = options.get("rollout") or {}
        if rollout:
            raise ValueError(f"{env.name} takes no rollout options, got {sorted(rollout)}")
        return None

    def summarize(self, env, env_params, trainer, state, rows: list[dict], evaluations: list[dict], options: dict,
                  run_dir: Path) -> dict[str, Any]:
        return {}

    def summary_lines(self, summary: dict) -> list[str]:
        return []

    def plot(self, env, rows: list[dict], summary: dict, evaluations: list[dict], run_dir: Path) -> None:
        return None


def evaluate_policy(env, env_params, trainer, state, seed_index: int = 0, key: jax.Array | None = None,
                    deterministic: bool = True) -> dict[str, Any]:
    """One episode of seed ``seed_index``'s policy from a reset (deterministic actions by
    default; action masks applied where the env has them). Returns ``actions`` and ``rewards``
    per group (T, N, ...) and the step ``info`` stacked over time (``final_obs`` dropped)."""
    key = jax.random.PRNGKey(0) if key is None else key
    one = jax.tree_util.tree_map(lambda x: x[seed_index], state)
    policy, carry = trainer.policy(one), trainer.initial_carry(1)
    act, step = jax.jit(trainer.act, static_argnames="deterministic"), jax.jit(env.step)
    has_mask = hasattr(env, "action_mask")
    key, k_reset = jax.random.split(key)
    obs, env_state = env.reset(k_reset, env_params)
    first = jnp.ones((1,), bool)
    actions_log, rewards_log, infos = [], [], []
    for _ in range(int(np.max(np.asarray(getattr(env_params, "max_steps", 1000))))):
        key, k_act, k_step = jax.random.split(key, 3)
        batch = jax.tree_util.tree_map(lambda x: x[None], obs)
        mask = {g: env.action_mask(g, env_state, env_params)[None] for g in env.agents} if has_mask else None
        actions, carry = act(policy, batch, carry, first, k_act, deterministic=deterministic, mask=mask)
        actions = jax.tree_util.tree_map(lambda x: x[0], actions)
        obs, env_state, rewards, terminated, truncated, info = step(k_step, env_state, actions, env_params)
        first = jnp.zeros((1,), bool)
        actions_log.append(jax.tree_util.tree_map(np.asarray, actions))
        rewards_log.append(jax.tree_util.tree_map(np.asarray, rewards))
        infos.append(jax.tree_util.tree_map(np.asarray, {k: v for k, v in info.items() if k != "final_obs"}))
        if bool(terminated) or bool(truncated):
            break
    stack = lambda logs: jax.tree_util.tree_map(lambda *xs: np.stack(xs), *logs)  # noqa: E731
    return {"actions": stack(actions_log), "rewards": stack(rewards_log), "info": stack(infos)}


def mean_and_stderr(values: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error (std with ddof = 1 over √n; 0 for a single value) along ``axis``."""
    values = np.asarray(values, float)
    n = values.shape[axis]
    stderr = values.std(axis=axis, ddof=1) / np.sqrt(n) if n > 1 else np.zeros_like(values.mean(axis=axis))
    return values.mean(axis=axis), stderr


def plot_returns(env, rows: list[dict], run_dir: Path) -> None:
    """``returns.png`` (one group) or ``returns-<group>.png``: return per agent, mean over seeds
    with the seeds' range shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.array([r["env_steps"] for r in rows])
    for group in env.agents:
        returns = np.array([r[group]["episode_return"] for r in rows])  # (updates, seeds, agents)
        fig, ax = plt.subplots(figsize=(7, 4))
        for i in range(returns.shape[2]):
            ax.plot(steps, returns[:, :, i].mean(1), label=f"agent {i}")
            if returns.shape[1] > 1:
                ax.fill_between(steps, returns[:, :, i].min(1), returns[:, :, i].max(1), alpha=0.2)
        ax.set(xlabel="env steps per seed", ylabel="episode return", title=f"{env.name}: return per agent ({group})")
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        fig.savefig(run_dir / ("returns.png" if len(env.agents) == 1 else f"returns-{group}.png"), dpi=120)
        plt.close(fig)
