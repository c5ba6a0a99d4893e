"""climate-mitigation-levers, the game's continuous relaxation
(jaxclimate/envs/climate_mitigation/relaxed.py): at the levels' values it is the game, year for
year and with the look-ahead in the last year; its return is differentiable; it passes the
environment checks."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate import make
from jaxclimate.envs.climate_mitigation.env import HORIZON
from jaxclimate.testing import check_env


def test_at_the_levels_values_it_plays_the_game_and_its_return_is_differentiable():
    relaxed, params = make("climate-mitigation-levers")
    game, _ = make("climate-mitigation")
    levels = jax.random.randint(jax.random.key(0), (HORIZON, game.num_agents, 4), 0, 3)
    values = jnp.concatenate([jnp.asarray(params.effort_levels)[levels[..., :3]], jnp.asarray(params.adaptation_levels)[levels[..., 3:]]], -1)

    def episode(env, actions):
        obs, state = env.reset(jax.random.key(1), params)

        def body(state, a):
            obs, state, rewards, terminated, _, info = env.step(jax.random.key(2), state, {"countries": a}, params)
            return state, (rewards["countries"], obs["countries"], terminated, info["temperature"], info["lookahead_temperatures"])

        return jax.lax.scan(body, state, actions)[1]

    r_relaxed, obs_relaxed, done_relaxed, t_relaxed, ahead_relaxed = jax.jit(lambda a: episode(relaxed, a))(values)
    r_game, obs_game, done_game, t_game, ahead_game = jax.jit(lambda a: episode(game, a))(levels)
    # the temperatures the training report plots, look-ahead included, are the game's
    np.testing.assert_allclose(t_relaxed, t_game, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ahead_relaxed[-1], ahead_game[-1], rtol=1e-6, atol=1e-6)
    assert float(jnp.abs(ahead_game[-1]).min()) > 0.5  # 2051..2065 are warm: the comparison is not of zeros
    np.testing.assert_allclose(r_relaxed, r_game, rtol=1e-6, atol=1e-6)  # the look-ahead's damages included in 2050
    np.testing.assert_array_equal(done_relaxed, done_game)
    assert bool(done_game[-1]) and float(jnp.abs(r_game[-1]).sum()) > float(jnp.abs(r_game[-2]).sum())
    from jaxclimate.envs.climate_mitigation.report import ClimateMitigationLeversReport, ClimateMitigationReport

    np.testing.assert_allclose(
        ClimateMitigationLeversReport().lever_values(np.asarray(values), params),
        ClimateMitigationReport().lever_values(np.asarray(levels), params),
        rtol=1e-6,
    )
    grad = jax.grad(lambda a: episode(relaxed, a)[0].sum())(jnp.full_like(values, 0.04))
    assert np.isfinite(np.asarray(grad)).all() and float(jnp.abs(grad).max()) > 0
    check_env(relaxed, params)
