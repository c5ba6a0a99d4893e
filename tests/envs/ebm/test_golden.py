"""float64 parity with the climlab golden trajectories (docs/ebm.md §7.2; tests/data/ebm/README.md).

Ts ≤ 1e-10 °C at every one of the 201 rows; rewards and band RMSEs rtol 1e-9, atol 1e-8.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate.envs.ebm import EBMParams, area_weighted_rmse_bands, simulate, static_baseline
from tests.conftest import load_golden

DEFAULT_CASES = ["case_a_default", "case_b_fixed", "case_c_fixed_AB_only"]
PAPER_COMPAT_CASES = ["case_a_default_climlab082", "case_b_fixed_climlab082"]


def run_case(g: dict, params: EBMParams) -> np.ndarray:
    Ts = jax.jit(simulate)(params, g["D"], g["A_Wm2"], g["B"], g["a0"], g["a2"])
    return np.asarray(Ts)


def rewards_from(Ts: np.ndarray, target: np.ndarray, n_agents: int) -> np.ndarray:
    sq = (Ts[1:] - target) ** 2
    return -sq.reshape(len(sq), n_agents, -1).mean(axis=-1)


@pytest.mark.parametrize("case", DEFAULT_CASES + PAPER_COMPAT_CASES)
def test_trajectory_parity(x64, case):
    g = load_golden(case)
    ignore = not bool(g["albedo_actions_effective"])
    params = EBMParams(ignore_albedo_actions=ignore)
    Ts = run_case(g, params)
    assert Ts.dtype == np.float64
    assert np.max(np.abs(Ts - g["Ts"])) <= 1e-10
    target = np.asarray(params.target)
    np.testing.assert_allclose(rewards_from(Ts, target, 1)[:, 0], g["reward_v1"], rtol=1e-9, atol=1e-8)
    np.testing.assert_allclose(rewards_from(Ts, target, 2), g["reward_a2"], rtol=1e-9, atol=1e-8)
    np.testing.assert_allclose(rewards_from(Ts, target, 6), g["reward_a6"], rtol=1e-9, atol=1e-8)
    bands = np.asarray(area_weighted_rmse_bands(jnp.asarray(Ts), params.target))
    np.testing.assert_allclose(bands, g["areaWRMSE_bands_per_step"], rtol=1e-9, atol=1e-8)
    np.testing.assert_allclose(bands[-1], g["final_areaWRMSE_bands"], rtol=1e-9, atol=1e-8)


def test_case_a_episodic_return(x64):
    g = load_golden("case_a_default")
    Ts = run_case(g, EBMParams())
    assert rewards_from(Ts, np.asarray(EBMParams().target), 1).sum() == pytest.approx(-60358.110948, abs=1e-6)


def test_static_baseline_column(x64):
    # docs/ebm.md §5.2: the paper's "climlab" column, exactly.
    expected = [11.452578753279061, 7.76813497113676, 2.7298888959996184, 3.7462116540426553, 6.397740126280645, 5.566489292478827]
    T_final, bands = static_baseline()
    np.testing.assert_allclose(np.asarray(bands), expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.asarray(T_final)[[0, 47, 48, 95]], [-20.01285922, 26.85421951, 26.85421951, -20.01285914], atol=1e-8)


# --- planted bugs: parity must notice small equation changes ----------------------------


def test_parity_detects_ignored_albedo_flag(x64):
    # Running the climlab-0.8.2 case with albedo actions effective must break parity.
    g = load_golden("case_b_fixed_climlab082")
    Ts = run_case(g, EBMParams(ignore_albedo_actions=False))
    assert np.max(np.abs(Ts - g["Ts"])) > 1.0


@pytest.mark.parametrize(
    "perturbation", [dict(heat_capacity=4.1813e7 * (1 + 1e-9)), dict(timestep=350632.512 * (1 + 1e-9)), dict(insolation_scale=1 + 1e-9)]
)
def test_parity_detects_tiny_parameter_errors(x64, perturbation):
    g = load_golden("case_b_fixed")
    params = EBMParams()
    if "insolation_scale" in perturbation:
        params = params.replace(insolation=np.asarray(params.insolation) * perturbation["insolation_scale"])
    else:
        params = params.replace(**perturbation)
    Ts = run_case(g, params)
    assert np.max(np.abs(Ts - g["Ts"])) > 1e-10


def test_parity_detects_explicit_diffusion_ordering(x64):
    # Diffusing first, then applying radiation (a plausible porting mistake) must fail parity.
    from jaxclimate.envs.ebm import physics

    g = load_golden("case_c_fixed_AB_only")
    params = EBMParams()

    def swapped_step(T, forcing):
        D, A, B, a0, a2 = forcing
        T_d = physics.implicit_diffusion(T, D, params.timestep, params.heat_capacity)
        alpha = physics.albedo(T_d, a0, a2)
        T_new = T_d + params.timestep / params.heat_capacity * ((1 - alpha) * physics.INSOLATION - (A + B * T_d))
        return T_new, T_new

    T0 = jnp.full(96, 50.0)
    _, Ts = jax.lax.scan(swapped_step, T0, tuple(jnp.asarray(g[k]) for k in ("D", "A_Wm2", "B", "a0", "a2")))
    assert np.max(np.abs(np.asarray(Ts) - g["Ts"][1:])) > 1e-3


def test_float32_drift_within_documented_bound():
    # docs/ebm.md §7.1: float32 drifts by ≈ 4e-4 °C over 200 steps; tests allow 1e-3.
    g = load_golden("case_b_fixed")
    Ts = jax.jit(simulate, static_argnames="dtype")(EBMParams(), g["D"], g["A_Wm2"], g["B"], g["a0"], g["a2"], dtype=jnp.float32)
    assert Ts.dtype == jnp.float32
    assert np.max(np.abs(np.asarray(Ts, np.float64) - g["Ts"])) <= 1e-3
