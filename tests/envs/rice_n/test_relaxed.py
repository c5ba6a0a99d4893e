"""rice-n-rates, RICE-N's continuous relaxation (jaxclimate/envs/rice_n/relaxed.py): at the
rates of RICE-N's levels it is RICE-N with no trade, step for step; its history is the
planner's episode; it passes the environment checks."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate import make
from jaxclimate.envs.rice_n import planner
from jaxclimate.envs.rice_n.evaluation import episode_metrics
from jaxclimate.envs.rice_n.relaxed import history
from jaxclimate.testing import check_env

REGIONS = [0, 3, 9, 17, 26]


def test_at_the_levels_rates_it_steps_as_rice_n_without_trade():
    relaxed, params = make("rice-n-rates", regions=REGIONS)
    discrete, _ = make("rice-n", regions=REGIONS)
    n = len(REGIONS)
    key = jax.random.key(0)
    levels = jax.random.randint(key, (4, n, 2), 0, 11)
    _, a = relaxed.reset(key, params)
    _, b = discrete.reset(key, params)
    for t in range(4):
        full = jnp.zeros((n, discrete.nvec.size), jnp.int32).at[:, :2].set(levels[t])  # export limit, tariffs, bids 0
        obs_a, a, r_a, *_ = relaxed.step(key, a, {"regions": levels[t] / 10.0}, params)
        obs_b, b, r_b, *_ = discrete.step(key, b, {"regions": full}, params)
        np.testing.assert_array_equal(r_a["regions"], r_b["regions"])
        np.testing.assert_array_equal(obs_a["regions"], obs_b["regions"])
    assert relaxed.action_space("regions").shape == (2,) and relaxed.name == "rice-n-rates[5 regions]"


def test_its_history_is_the_planners_episode_and_it_passes_check_env():
    env, params = make("rice-n-rates", regions=REGIONS)
    base, _ = make("rice-n", regions=REGIONS)
    schedule = planner.Rates(
        jnp.linspace(0.1, 0.4, 20)[:, None] * jnp.ones(len(REGIONS)), jnp.linspace(0.0, 0.9, 20)[:, None] * jnp.ones(len(REGIONS))
    )
    h = history(env, params, np.stack([schedule.savings, schedule.mitigation], -1))
    expected = planner.metrics(base, params, schedule)
    np.testing.assert_allclose(h["welfare"].sum(), expected["welfare"], rtol=1e-6)
    np.testing.assert_allclose(episode_metrics(h)["delta_t"], expected["delta_t"], rtol=1e-6)
    check_env(env, params)
