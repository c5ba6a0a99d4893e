"""Evaluation of EBM profiles: area-weighted RMSE per 30° band and the static baseline.

areaWRMSE_b = sqrt( Σ_{i∈b} w_i · (T̂_i − T_i)² ),  w_i = cos φ_i / Σ_{j∈b} cos φ_j   (docs/ebm.md §5.1)

with the six bands [−90, −60), [−60, −30), [−30, 0), [0, 30), [30, 60), [60, 90) degrees,
south to north (16 cells each on the 96-point grid). This is the paper's skill measure; the
training reward is an unweighted MSE, a different quantity.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.envs.ebm import physics
from jaxclimate.envs.ebm.env import EBMParams, simulate

BAND_EDGES_DEG = np.array([-90.0, -60.0, -30.0, 0.0, 30.0, 60.0, 90.0])
BAND_NAMES = ("90S-60S", "60S-30S", "30S-0", "0-30N", "30N-60N", "60N-90N")


def _band_weights() -> np.ndarray:
    """(6, 96) matrix: row b holds the within-band normalised cos φ weights of band b."""
    lat = physics.LAT_DEG
    member = (lat[None, :] >= BAND_EDGES_DEG[:-1, None]) & (lat[None, :] < BAND_EDGES_DEG[1:, None])
    w = member * np.cos(physics.LAT_RAD)[None, :]
    return w / w.sum(axis=1, keepdims=True)


BAND_WEIGHTS = _band_weights()


def area_weighted_rmse_bands(T: jax.Array, target: jax.Array) -> jax.Array:
    """areaWRMSE per 30° band (°C), shape (..., 6) for profiles ``T`` of shape (..., 96)."""
    T = jnp.asarray(T)
    sq_err = (jnp.asarray(target, T.dtype) - T) ** 2
    return jnp.sqrt(sq_err @ jnp.asarray(BAND_WEIGHTS.T, T.dtype))


def static_baseline(params: EBMParams | None = None, n_steps: int = 200, dtype=None) -> tuple[jax.Array, jax.Array]:
    """The paper's static "climlab" column (docs/ebm.md §5.2): the reference parameters
    (``params.D, A, B, a0, a2``) every step from the reset state, evaluated after
    ``n_steps`` steps. Returns (final profile (96,), areaWRMSE per band (6,))."""
    params = EBMParams() if params is None else params
    ones = jnp.ones(n_steps)
    Ts = simulate(
        params,
        D=params.D * ones,
        A=jnp.broadcast_to(jnp.asarray(params.A), (n_steps, physics.NUM_LAT)),
        B=jnp.broadcast_to(jnp.asarray(params.B), (n_steps, physics.NUM_LAT)),
        a0=params.a0 * ones,
        a2=params.a2 * ones,
        dtype=dtype,
    )
    return Ts[-1], area_weighted_rmse_bands(Ts[-1], params.target)
