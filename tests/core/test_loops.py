"""Loop unrolling by backend: the automatic choice, and that unrolling leaves results alone."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.core.loops import loop_unroll


def test_automatic_unroll_is_one_on_the_cpu_and_requests_win():
    assert jax.default_backend() == "cpu"  # the suite pins itself to the CPU (docs/testing.md)
    assert loop_unroll(None, 5) == 1 and loop_unroll(0, 5) == 1
    assert loop_unroll(3, 5) == 3 and loop_unroll(True, 5) is True and loop_unroll(False, 5) == 1


@pytest.mark.slow
def test_cicero_jax_unrolled_sub_steps_give_the_same_years():
    pytest.importorskip("ciceroscm")
    from jaxclimate.climate import cicero, engines

    engine = engines.CiceroJaxEngine(start_year=2016, dtype=jnp.float32)
    emissions = jnp.asarray(cicero.baseline_controllable()[2016 - 1900 : 2021 - 1900], jnp.float32)
    temperatures = {}
    for unroll in (1, 4):
        engine.model.unroll = unroll
        temperatures[unroll] = np.asarray(jax.jit(lambda e: engines.rollout(engine, e))(emissions))
    np.testing.assert_allclose(temperatures[4], temperatures[1], rtol=1e-6, atol=1e-7)
    assert np.ptp(temperatures[1]) > 0.01  # five years that move
