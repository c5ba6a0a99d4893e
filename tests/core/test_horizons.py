"""``params.max_steps`` is each environment's real episode length: the episode ends on that step."""

import jax
import numpy as np
import pytest

from jaxclimate import make
from jaxclimate.testing import rollout


@pytest.mark.slow
@pytest.mark.parametrize(
    "env_id, overrides, horizon",
    [
        ("climate-mitigation", {}, 35),
        ("rice-n", {"num_activity_steps": 3}, 3),
        ("rice-n-bilateral", {"num_activity_steps": 2}, 6),
        ("invest-esg", {}, 100),
        ("ebm-v1", {}, 200),
    ],
)
def test_episodes_end_at_max_steps(env_id, overrides, horizon):
    env, params = make(env_id, **overrides)
    assert int(params.max_steps) == horizon
    _, outs = jax.jit(rollout, static_argnums=(0, 3))(env, params, jax.random.PRNGKey(0), horizon)
    ended = np.asarray(outs["terminated"]) | np.asarray(outs["truncated"])
    assert ended[-1] and not ended[:-1].any()
