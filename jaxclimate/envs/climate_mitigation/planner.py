"""The climate game's cooperative optimum, by gradient through the game.

One planner sets every country's levers in every year to maximise the sum of the countries'
discounted returns — what the independent learners would reach if they acted as one:

    W(x) = Σ_i Σ_{t<H} γ^t · r_i,t(x),    x = (k, p),  k ∈ [k̲, k̄]^{H×N×3},  p ∈ [p̲, p̄]^{H×N}

with r the game's reward (paper Eqs. 28–33: damages c^c·ψ·ΔT⁴·(1 − P), quadratic lever costs,
linear adaptation cost, and the 15-year look-ahead inside the last year's reward), H = 35
decision years, k̲, k̄ and p̲, p̄ the smallest and largest effort and adaptation levels (0 and 1,
0 and 0.08 by default): the planner's levers are continuous within the range the learners' discrete levels span.

W is differentiable through the whole episode — the emissions, the climate engine (CICERO-SCM
in JAX, or a surrogate) and the look-ahead — so it is maximised by projected gradient ascent
(``jaxclimate.core.optim``: Adam, then a clip back into the box), with several restarts from
random levers ``vmap``ped, in one compiled program. At a maximum the projected gradient —
∇W with the components on a bound that point out of the box zeroed — vanishes: each lever is
either interior with ∂W/∂x = 0, or at a bound with the gradient pointing outwards. ``optimise``
reports it; the tests check it. (The prevention stock is clipped at its maximum, Eq. 27, so W
has kinks where adaptation fills the stock: there a one-sided derivative can stay nonzero.)
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core import optim, struct
from jaxclimate.envs.climate_mitigation.env import ACTION_NVEC, HORIZON, NUM_LEVERS, ClimateMitigation, MitigationParams


@dataclasses.dataclass(frozen=True)
class PlannerConfig:
    """Projected Adam ascent (``core.optim.minimise_in_box`` on −W): ``iterations`` steps from
    ``learning_rate`` decaying to 0.1 % of it (cosine), ``restarts`` random starting points, discount ``gamma`` per year (the paper's
    learners use 0.999)."""

    iterations: int = 400
    learning_rate: float = 0.05
    restarts: int = 4
    gamma: float = 0.999

    def __post_init__(self):
        for name, low in (("iterations", 1), ("restarts", 1)):
            if getattr(self, name) < low:
                raise ValueError(f"PlannerConfig.{name} must be >= {low}, got {getattr(self, name)}")
        if not self.learning_rate > 0:
            raise ValueError(f"PlannerConfig.learning_rate must be > 0, got {self.learning_rate}")
        if not 0 < self.gamma <= 1:
            raise ValueError(f"PlannerConfig.gamma must be in (0, 1], got {self.gamma}")


class Levers(NamedTuple):
    """Every country's levers in every decision year: efforts (H, N, 3), adaptation (H, N)."""

    efforts: jax.Array
    adaptation: jax.Array


def bounds(env: ClimateMitigation, params: MitigationParams) -> tuple[Levers, Levers]:
    """The box's corners: the smallest and largest effort and adaptation levels, in every year and country."""
    n, dt = env.num_agents, env.dtype
    effort_levels, adaptation_levels = jnp.asarray(params.effort_levels, dt), jnp.asarray(params.adaptation_levels, dt)

    def corner(pick):
        return Levers(jnp.full((HORIZON, n, NUM_LEVERS), pick(effort_levels)), jnp.full((HORIZON, n), pick(adaptation_levels)))

    return corner(jnp.min), corner(jnp.max)


def upper_bounds(env: ClimateMitigation, params: MitigationParams) -> Levers:
    """The box's upper corner: the largest effort and adaptation levels, in every year and country."""
    return bounds(env, params)[1]


def constant_levers(env: ClimateMitigation, params: MitigationParams, levels: Any) -> Levers:
    """The levers of one discrete action (4 level indices) played by every country every year."""
    efforts, adaptation = env.levers(jnp.broadcast_to(jnp.asarray(levels, jnp.int32), (env.num_agents, NUM_LEVERS + 1)), params)
    return Levers(jnp.broadcast_to(efforts, (HORIZON, *efforts.shape)), jnp.broadcast_to(adaptation, (HORIZON, *adaptation.shape)))


def episode(env: ClimateMitigation, params: MitigationParams, levers: Levers) -> dict[str, jax.Array]:
    """One episode played with ``levers``: each country's reward per year (H, N), the last one
    holding the look-ahead's damages (Eq. 32), and ΔT per decision year (H,) and look-ahead year (15,)."""
    params = struct.cast_numeric(params, env.dtype)
    _, state = env.reset_env(jax.random.PRNGKey(0), params)  # the game has no randomness

    def year(state, x):
        state, cost, _ = env.year(state, x.efforts, x.adaptation, params)
        return state, (-cost, state.temperature)

    final, (rewards, temperature) = jax.lax.scan(year, state, levers)
    lookahead = env.lookahead(final, params)
    return {"rewards": rewards.at[-1].add(-lookahead["cost"]), "temperature": temperature, "lookahead_temperature": lookahead["temperatures"]}


def welfare(env: ClimateMitigation, params: MitigationParams, levers: Levers, gamma: float) -> jax.Array:
    """W: the sum over countries of the discounted returns of one episode played with ``levers``."""
    rewards = episode(env, params, levers)["rewards"]
    discount = jnp.asarray(gamma, rewards.dtype) ** jnp.arange(HORIZON, dtype=rewards.dtype)
    return jnp.sum(discount[:, None] * rewards)


def projected_gradient(env: ClimateMitigation, params: MitigationParams, levers: Levers, gamma: float) -> Levers:
    """∇(−W) with the components on a bound of the box that point out of it zeroed
    (``core.optim.projected_gradient``): zero at a maximum of W."""
    grad = jax.grad(lambda x: -welfare(env, params, x, gamma))(levers)
    return optim.projected_gradient(levers, grad, *bounds(env, params))


def constant_policy_welfare(env: ClimateMitigation, params: MitigationParams, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """W of every constant discrete policy (each of the 3⁴ level combinations, played by every
    country every year), in one compiled program: (levels (81, 4), W (81,))."""
    grid = np.array(list(itertools.product(*(range(n) for n in ACTION_NVEC))))
    values = jax.jit(jax.vmap(lambda lv: welfare(env, params, constant_levers(env, params, lv), gamma)))(jnp.asarray(grid))
    return grid, np.asarray(values)


def optimise(env: ClimateMitigation, params: MitigationParams, key: jax.Array, config: PlannerConfig = PlannerConfig()) -> dict[str, Any]:
    """The planner's optimum: projected Adam ascent of W from ``config.restarts`` random points
    in the box, one compiled program. Returns the best levers, W per restart, the best W's
    history over iterations, and the projected gradient at the best point with its largest entry."""
    lower, upper = bounds(env, params)
    found = optim.maximise_from_restarts(
        lambda x: welfare(env, params, x, config.gamma), key, lower, upper,
        restarts=config.restarts, iterations=config.iterations, learning_rate=config.learning_rate,
    )  # fmt: skip
    # the optimiser's names, with the point and its value named as the planner names them
    return {"levers": found.pop("x"), "welfare": found.pop("value"), "welfare_per_restart": found.pop("values"), **found}
