"""Trained policies: a run directory's last checkpoint, ready to act and to be rolled out.

    policy = jaxclimate.load_policy("runs/climate-mitigation-i-ippo-20261126-030000")
    actions, carry = policy.act(key, obs)               # obs: every group with a leading batch axis
    returns = policy.episode_returns(episodes=16)       # all seeds × 16 episodes in one program
    policy = jaxclimate.load_policy(run_dir, damage_coefficient=0.006)   # under changed parameters

The environment, the algorithm and its configuration come from the run's ``config.json``; the
state from its latest checkpoint (the same one ``--resume`` continues from). Keyword arguments
override the environment's parameters, so a policy can be evaluated where it was not trained.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.checkpoint import Checkpointer
from jaxclimate.reporting import episode_program
from jaxclimate.run_options import RunOptions


@dataclasses.dataclass
class TrainedPolicy:
    """Every seed's trained policy from one run, with the environment to roll it out in."""

    env: Any
    env_params: Any
    trainer: Any
    state: Any  # the run's training state, every seed stacked on axis 0 (host arrays)
    options: RunOptions  # the run's recorded options, run_dir the folder it was loaded from
    chunks_done: int
    _programs: dict = dataclasses.field(default_factory=dict, repr=False)  # (steps, deterministic) -> compiled roll-out

    @property
    def seeds(self) -> int:
        return int(jax.tree_util.tree_leaves(self.state)[0].shape[0])

    def policy(self, seed: int = 0) -> Any:
        """What ``trainer.act`` needs of seed ``seed`` (network parameters, or actors)."""
        return self.trainer.policy(jax.tree_util.tree_map(lambda x: jnp.asarray(x[seed]), self.state))

    def act(
        self,
        key: jax.Array,
        obs: dict,
        carry: Any = None,
        done: jax.Array | None = None,
        seed: int = 0,
        deterministic: bool = True,
        mask: dict | None = None,
    ) -> tuple[dict, Any]:
        """Actions of seed ``seed``'s policy for a batch of envs (``obs``: group -> (B, N, ...));
        ``carry``/``done`` for recurrent networks (default: a fresh episode). Jittable."""
        self._check_batched(obs)
        batch = jax.tree_util.tree_leaves(obs)[0].shape[0]
        carry = self.trainer.initial_carry(batch) if carry is None else carry
        done = jnp.ones((batch,), bool) if done is None else done
        return self.trainer.act(self.policy(seed), obs, carry, done, key, deterministic=deterministic, mask=mask)

    def _check_batched(self, obs: dict) -> None:
        """Refuse, in one line, observations without the leading batch axis (one env's)."""
        for group, n in self.env.agents.items():
            value = obs.get(group) if isinstance(obs, dict) else None
            if not hasattr(value, "ndim"):  # a factored observation (shared and per-agent parts) is not checked here
                continue
            one_env = (n, *self.env.observation_space(group).shape)
            if tuple(value.shape) == one_env:
                raise ValueError(
                    f"policy.act takes a batch of envs: obs[{group!r}] has one env's shape {one_env}, expected (B, {', '.join(map(str, one_env))}); "
                    f"add a leading axis (jax.tree_util.tree_map(lambda x: x[None], obs))"
                )

    def episode_returns(
        self, episodes: int = 1, key: jax.Array | None = None, deterministic: bool = True, env_params: Any = None
    ) -> dict[str, np.ndarray]:
        """Each agent's return over one episode, for every seed × ``episodes`` episodes (each
        from its own key), in one compiled program: group -> (seeds, episodes, N)."""
        params = self.env_params if env_params is None else env_params
        steps = int(np.max(np.asarray(params.max_steps)))
        keys = jax.random.split(jax.random.PRNGKey(0) if key is None else key, episodes)
        policies = jax.vmap(self.trainer.policy)(jax.tree_util.tree_map(jnp.asarray, self.state))
        return jax.tree_util.tree_map(np.asarray, self._returns_program(steps, deterministic)(policies, params, keys))

    def returns_under(self, params_batch: Any, key: jax.Array | None = None, deterministic: bool = True) -> dict[str, np.ndarray]:
        """Each agent's return over one episode under each of a batch of parameters (leaves with
        a leading axis: draws of an uncertainty), for every seed: group -> (draws, seeds, N)."""
        steps = int(np.max(np.asarray(params_batch.max_steps)))
        n = int(jax.tree_util.tree_leaves(params_batch)[0].shape[0])
        keys = jax.random.split(jax.random.PRNGKey(0) if key is None else key, n)
        policies = jax.vmap(self.trainer.policy)(jax.tree_util.tree_map(jnp.asarray, self.state))
        per_seed = jax.vmap(self._episode_return(steps, deterministic), in_axes=(0, None, None))
        program = jax.jit(jax.vmap(per_seed, in_axes=(None, 0, 0)))
        return jax.tree_util.tree_map(np.asarray, program(policies, params_batch, keys))

    def _episode_return(self, steps: int, deterministic: bool):
        """``(policy, params, key) -> returns``: each agent's return over one episode."""
        episode = episode_program(self.env, self.trainer, steps, deterministic)

        def returns(policy, params, k):
            _, rewards, _, done = episode(policy, params, k)
            alive = jnp.cumsum(done) - done == 0  # the steps up to and including the first end
            return {g: jnp.sum(r * alive.reshape(-1, *([1] * (r.ndim - 1))), axis=0) for g, r in rewards.items()}

        return returns

    def _returns_program(self, steps: int, deterministic: bool):
        """``(policies, env_params, keys) -> returns``, compiled once per horizon and mode."""
        if (steps, deterministic) not in self._programs:
            returns = self._episode_return(steps, deterministic)
            per_seed = jax.vmap(jax.vmap(returns, in_axes=(None, None, 0)), in_axes=(0, None, None))
            self._programs[(steps, deterministic)] = jax.jit(per_seed)
        return self._programs[(steps, deterministic)]


def load_policy(run_dir: str | Path, **env_overrides: Any) -> TrainedPolicy:
    """The trained policies of ``run_dir`` (its ``config.json`` and latest checkpoint);
    ``env_overrides`` change the environment's parameters as ``jaxclimate.make`` does (dotted
    names for nested fields, e.g. ``**{"negotiation.bca_rate": 0.5}``; not its constructor
    options)."""
    from jaxclimate.core.registry import override_params
    from jaxclimate.run.assemble import make_run

    run_dir = Path(run_dir)
    config_file = run_dir / "config.json"
    if not config_file.exists():
        raise FileNotFoundError(f"{run_dir} is not a run directory: no config.json (python -m jaxclimate.train writes one)")
    options = RunOptions.from_record(json.loads(config_file.read_text()), run_dir=str(run_dir))
    env, env_params, _, trainer, _ = make_run(options)
    if env_overrides:
        env_params = override_params(options.env, env_params, env_overrides)
    keys = jax.random.split(jax.random.PRNGKey(options.seed), options.seeds)
    like = jax.eval_shape(jax.vmap(trainer.init), keys)
    checkpoints = Checkpointer(run_dir / "checkpoints")
    try:
        state, chunks_done = checkpoints.restore_latest(like=like), checkpoints.latest_step()
    finally:
        checkpoints.close()
    if state is None:
        raise FileNotFoundError(f"{run_dir} has no checkpoint yet: train it (or continue it with --resume) first")
    if int(chunks_done) == 0:
        warnings.warn(
            f"{run_dir} was stopped before its first chunk finished: these policies are untrained (continue it with --resume)",
            UntrainedPolicyWarning,
            stacklevel=2,
        )
    return TrainedPolicy(env, env_params, trainer, state, options, int(chunks_done))


class UntrainedPolicyWarning(UserWarning):
    """A run's policies were loaded from a checkpoint taken before any training."""
