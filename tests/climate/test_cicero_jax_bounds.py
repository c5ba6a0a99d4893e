"""CICERO-SCM in JAX refuses ocean parameters its explicit sub-step cannot integrate
(cicero_jax.check_ocean_parameters, docs/climate_mitigation.md §7.5): the bound is where a run
stays finite, and beyond it (1.5× the bound) the run blows up."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.climate import cicero, cicero_jax

MONTH = cicero_jax.SEC_YEAR / cicero_jax.LDTIME


def _beto_at(ratio: float) -> float:
    """The exchange coefficient β whose explicit term β·Δt/(c₁·Δz) is ``ratio`` (deep layers of 100 m)."""
    return ratio * cicero_jax.HEAT_CAPACITY * cicero_jax.DEEP_LAYER / MONTH


def test_the_bound_separates_runs_that_stay_finite_from_runs_that_blow_up():
    model = cicero_jax.CiceroJAX()
    emissions = model.full_emissions(cicero.baseline_controllable()[cicero.SCENARIO_START - cicero.START_YEAR :])
    run = jax.jit(lambda beto: jax.lax.scan(lambda s, e: model.step(s, e, {"beto": beto}), model.zero_state(), emissions)[1]["dT_glob_air"])
    inside, outside = _beto_at(0.95), _beto_at(1.5)
    cicero_jax.check_ocean_parameters({"beto": inside})
    with pytest.raises(ValueError, match=r"pamset_udm: beto·Δt/\(c₁·min Δz\) \+ cpi·W·Δt/\(yr·mixed\) = 1.5 > 1"):
        cicero_jax.check_ocean_parameters({"beto": outside})
    assert np.all(np.isfinite(run(jnp.float32(inside)))) and not np.all(np.isfinite(run(jnp.float32(outside))))
    with pytest.raises(ValueError, match=r"pamset_udm\['mixed'\] must be positive"):
        cicero_jax.CiceroJAX(pamset_udm={**cicero.PAMSET_UDM, "mixed": 0.0})
