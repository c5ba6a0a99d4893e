"""The climate game's cooperative planner (planner.py): its gradient is the finite-difference
one, its optimum beats every constant policy and its projected gradient vanishes there.

The planner is engine-agnostic; these tests use a one-box linear engine (ΔT relaxes towards a
multiple of the CO2 emissions) so that they compile in seconds. The CICERO-SCM-in-JAX optimum
is baselines/cooperative_optimum.py's."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.envs.climate_mitigation import ClimateMitigation
from jaxclimate.envs.climate_mitigation import planner as P
from jaxclimate.envs.climate_mitigation.env import START_YEAR, baseline_arrays


@dataclasses.dataclass(frozen=True)
class OneBoxEngine:
    """T' = ρ·T + κ·(E_CO2,FF + E_CO2,AFOLU), κ set so that the 2015 emissions hold ΔT at
    ``equilibrium`` K: at 0.6 K full energy effort costs more than it saves late in the game, so
    the optimum is interior and no constant of the discrete grid reaches it."""

    start_year: int = START_YEAR
    rho: float = 0.9
    equilibrium: float = 0.6

    def initial_temperature(self) -> float:
        return 1.0

    def init(self) -> jax.Array:
        return jnp.asarray(self.initial_temperature(), jnp.float32)

    def step(self, state: jax.Array, emissions_t: jax.Array) -> tuple[jax.Array, jax.Array]:
        co2 = float(np.sum(baseline_arrays()["e2015"][:2]))
        T = self.rho * state + (1.0 - self.rho) * self.equilibrium / co2 * (emissions_t[0] + emissions_t[1])
        return T, T


@pytest.fixture(scope="module")
def game():
    env = ClimateMitigation(scenario="i", engine=OneBoxEngine())
    return env, env.default_params


def test_the_welfare_gradient_equals_central_differences(game):
    env, params = game
    upper = P.upper_bounds(env, params)
    key_x, key_d = jax.random.split(jax.random.PRNGKey(3))
    x = jax.tree_util.tree_map(lambda hi, k: hi * jax.random.uniform(k, hi.shape, hi.dtype, 0.2, 0.8), upper, P.Levers(*jax.random.split(key_x)))
    direction = jax.tree_util.tree_map(lambda hi, k: hi * jax.random.normal(k, hi.shape, hi.dtype), upper, P.Levers(*jax.random.split(key_d)))
    W = jax.jit(lambda x: P.welfare(env, params, x, 0.999))
    grad = jax.jit(jax.grad(lambda x: P.welfare(env, params, x, 0.999)))(x)
    along = sum(float(jnp.vdot(g, d)) for g, d in zip(grad, direction))
    eps = 1e-2  # the levers stay inside the box, away from the emission clip
    step = lambda s: jax.tree_util.tree_map(lambda v, d: v + s * eps * d, x, direction)  # noqa: E731
    central = (float(W(step(1.0))) - float(W(step(-1.0)))) / (2 * eps)
    assert along == pytest.approx(central, rel=2e-3)
    assert abs(along) > 1e-3  # a direction that matters


@pytest.mark.slow
def test_the_optimum_beats_every_constant_policy_and_its_projected_gradient_vanishes(game):
    env, params = game
    grid, constants = P.constant_policy_welfare(env, params, 0.999)
    result = P.optimise(env, params, jax.random.PRNGKey(0), P.PlannerConfig(iterations=150, restarts=2, learning_rate=0.05))
    assert result["welfare"] > constants.max() + 1e-4, (result["welfare"], grid[np.argmax(constants)], constants.max())
    assert result["history"][-1] > result["history"][0]
    start = P.projected_gradient(
        env, params, P.upper_bounds(env, params)._replace(adaptation=jnp.zeros_like(P.upper_bounds(env, params).adaptation)), 0.999
    )
    assert result["max_projected_gradient"] < 1e-3 * max(float(jnp.max(jnp.abs(g))) for g in start)


def test_bad_planner_settings_name_the_field():
    with pytest.raises(ValueError, match="PlannerConfig.restarts"):
        P.PlannerConfig(restarts=0)
    with pytest.raises(ValueError, match="PlannerConfig.gamma"):
        P.PlannerConfig(gamma=1.5)
