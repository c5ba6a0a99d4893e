"""RICE-N's cooperative optimum, by gradient through the economy and its climate module.

One planner sets every region's savings rate s and mitigation rate μ at every activity step to
maximise global welfare, the regions' utilities discounted at the model's own rate:

    W(s, μ) = Σ_t Σ_i U_i,t / (1 + ρ)^(Δ·t),   s, μ ∈ [0, 1]^(E×N)

(paper Eq. 1 with the welfare RICE-N logs, docs/rice_n.md §10: ρ = 0.015 per year, Δ = 5
years), with no trade and no tariffs — every other action entry 0, as the constant policies of
the paper's index plane (docs/rice_n.md §11.3) — so the planner is the continuous, time-varying
version of that grid. The episode runs through ``dynamics.activity_step`` with the
environment's climate module (DICE-2016 boxes, CICERO-SCM in JAX or its GRU surrogate), so W is
differentiable end to end; it is maximised by projected Adam (``jaxclimate.core.optim``) from
several random starts ``vmap``ped, one compiled program. The optimum is judged as any RICE-N
policy: ΔT 2015→2115 and ΣY give its climate and economic indices (``evaluation``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core import optim, struct
from jaxclimate.envs.rice_n.dynamics import activity_step, initial_state
from jaxclimate.envs.rice_n.env import RiceN
from jaxclimate.envs.rice_n.evaluation import climate_index, economic_index
from jaxclimate.envs.rice_n.params import RiceParams


@dataclasses.dataclass(frozen=True)
class PlannerConfig:
    """Projected Adam: ``iterations`` steps from ``learning_rate`` (cosine decay to 0.1 % of
    it), ``restarts`` random starting points."""

    iterations: int = 500
    learning_rate: float = 0.05
    restarts: int = 4

    def __post_init__(self):
        for name in ("iterations", "restarts"):
            if getattr(self, name) < 1:
                raise ValueError(f"PlannerConfig.{name} must be >= 1, got {getattr(self, name)}")
        if not self.learning_rate > 0:
            raise ValueError(f"PlannerConfig.learning_rate must be > 0, got {self.learning_rate}")


class Rates(NamedTuple):
    """Every region's savings and mitigation rate at every activity step, each (E, N) in [0, 1]."""

    savings: jax.Array
    mitigation: jax.Array


def constant_rates(env: RiceN, savings: float, mitigation: float) -> Rates:
    """The rates of a constant policy (level / 10 of the discrete grid) in every step and region."""
    shape = (env.num_activity_steps, env.num_regions)
    return Rates(jnp.full(shape, savings, env.dtype), jnp.full(shape, mitigation, env.dtype))


def episode(env: RiceN, params: RiceParams, rates: Rates) -> dict[str, jax.Array]:
    """One episode of activity steps played with ``rates`` (no trade, no tariffs): each region's
    utility and discounted welfare per step (E, N), net output Y (E, N) and T_AT from the reset
    state on (E + 1,)."""
    params = struct.cast_numeric(params, env.dtype)
    state = initial_state(params, env.dtype, env.climate)
    n = env.num_regions
    square = jnp.zeros((n, n), env.dtype)

    def step(state, r):
        actions = {"savings": r.savings, "mitigation": r.mitigation, "export_limit": jnp.zeros(n, env.dtype), "tariffs": square, "bids": square}
        state = activity_step(state, actions, params, climate=env.climate)
        return state, (state.utility, state.social_welfare, state.gross_output, state.temperature[0])

    first = state.temperature[0]
    _, (utility, welfare, output, temperature) = jax.lax.scan(step, state, rates)
    return {"utility": utility, "welfare": welfare, "output": output, "temperature": jnp.concatenate([first[None], temperature])}


def welfare(env: RiceN, params: RiceParams, rates: Rates) -> jax.Array:
    """W: global discounted welfare of one episode played with ``rates``."""
    return jnp.sum(episode(env, params, rates)["welfare"])


def metrics(env: RiceN, params: RiceParams, rates: Rates) -> dict[str, float]:
    """The paper's measures of a policy: ΔT 2015→2115 and ΣY with their indices (unrounded), W."""
    run = jax.tree_util.tree_map(np.asarray, jax.jit(lambda r: episode(env, params, r))(rates))
    delta_t = float(run["temperature"][-1] - run["temperature"][0])
    total_output = float(np.sum(run["output"], dtype=np.float64))
    return {
        "welfare": float(np.sum(run["welfare"], dtype=np.float64)),
        "delta_t": delta_t,
        "total_output": total_output,
        "climate_index": float(climate_index(delta_t, rounded=False)),
        "economic_index": float(economic_index(total_output, rounded=False)),
        "temperature": run["temperature"].tolist(),
    }


def projected_gradient(env: RiceN, params: RiceParams, rates: Rates) -> Rates:
    """∇(−W) with the components on a bound of [0, 1] that point out of it zeroed: zero at a maximum."""
    grad = jax.grad(lambda r: -welfare(env, params, r))(rates)
    return optim.projected_gradient(rates, grad, *_box(env))


def _box(env: RiceN) -> tuple[Rates, Rates]:
    """Every rate's bounds, 0 and 1."""
    shape = (env.num_activity_steps, env.num_regions)
    return Rates(*[jnp.zeros(shape, env.dtype)] * 2), Rates(*[jnp.ones(shape, env.dtype)] * 2)


def optimise(env: RiceN, params: RiceParams, key: jax.Array, config: PlannerConfig = PlannerConfig()) -> dict[str, Any]:
    """The planner's optimum from ``config.restarts`` random rates, one compiled program.
    Returns the best rates, W per restart, the best W's history and its projected gradient."""
    found = optim.maximise_from_restarts(
        lambda r: welfare(env, params, r), key, *_box(env),
        restarts=config.restarts, iterations=config.iterations, learning_rate=config.learning_rate,
    )  # fmt: skip
    # the optimiser's names, with the point and its value named as the planner names them
    return {"rates": found.pop("x"), "welfare": found.pop("value"), "welfare_per_restart": found.pop("values"), **found}
