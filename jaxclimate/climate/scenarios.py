"""Emission-scenario generator: perturbed SSP2-4.5 growth (paper Eqs. 4–9).

For each controllable gas g and year t = 2015..2075 a raw multiplier d̃ ~ U(ℓ, u) (Eq. 5,
bounds (0.925, 1.075), Eq. 11) is smoothed in time and applied to the baseline growth
(Eqs. 6–9). Written in telescoped form, with no growth ratios of the baseline (which divide
by zero and flip sign where CO2_AFOLU crosses zero in 2053):

    E'(t) = E_base(t) · Π_{s=2015..t} d(s)

Two smoothing variants:

* ``"log1p"`` (default, the authors' code and every dataset built with it):
  u = log(1 + d̃); u(t) ← α·u(t−1) + (1−α)·u(t) in time order; d = exp(u) − 1. The first
  year (2015) keeps its raw, unsmoothed draw, so 2015 is already perturbed.
* ``"geometric"`` (the paper's text, Eq. 6): ζ(t) = ζ(t−1)^α · ζ̃(t)^(1−α) with ζ(2015) = 1,
  so E(2015) is the baseline.

``numpy_scenario(k)`` reproduces the authors' random stream exactly
(``numpy.random.default_rng(k)``, one ``uniform(lo, hi, 61)`` per emission column in model
order; the controllable gases are the first five columns). ``generate`` is the JAX version
(``jax.random``; same distribution, different stream).
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.climate.cicero import CONTROLLABLE, N_SCENARIO_YEARS, SCENARIO_START, START_YEAR, baseline_controllable

BOUNDS = (0.925, 1.075)
ALPHA = 0.8
Smoothing = Literal["log1p", "geometric"]


def _check(bounds: tuple[float, float], alpha: float, smoothing: str) -> None:
    lo, hi = bounds
    if not (0 < lo <= hi):
        raise ValueError(f"bounds must satisfy 0 < low <= high, got {bounds}")
    if not (0.0 <= alpha < 1.0):
        raise ValueError(f"alpha must lie in [0, 1), got {alpha}")
    if smoothing not in ("log1p", "geometric"):
        raise ValueError(f"smoothing must be 'log1p' or 'geometric', got {smoothing!r}")


def smooth_numpy(raw: np.ndarray, alpha: float = ALPHA, smoothing: Smoothing = "log1p") -> np.ndarray:
    """Smoothed multipliers d (61, n_gases) from raw draws, as a sequential loop (the
    reference for the golden files, to a few ulps: numpy's log1p/expm1 differ by CPU)."""
    raw = np.asarray(raw, np.float64)
    if smoothing == "log1p":
        u = np.log1p(raw)
        for t in range(1, len(u)):
            u[t] = alpha * u[t - 1] + (1 - alpha) * u[t]
        return np.expm1(u)
    log_zeta = np.zeros_like(raw)  # ζ(2015) = 1
    for t in range(1, len(raw)):
        log_zeta[t] = alpha * log_zeta[t - 1] + (1 - alpha) * np.log(raw[t])
    return np.exp(log_zeta)


def smooth(raw: jax.Array, alpha: float = ALPHA, smoothing: Smoothing = "log1p") -> jax.Array:
    """JAX version of :func:`smooth_numpy` (a ``lax.scan`` over years, axis 0)."""
    raw = jnp.asarray(raw)
    if smoothing == "log1p":
        u = jnp.log1p(raw)

        def ema(prev, x):
            cur = alpha * prev + (1 - alpha) * x
            return cur, cur

        _, rest = jax.lax.scan(ema, u[0], u[1:])
        return jnp.expm1(jnp.concatenate([u[:1], rest]))

    def geo(prev, x):
        cur = alpha * prev + (1 - alpha) * jnp.log(x)
        return cur, cur

    _, rest = jax.lax.scan(geo, jnp.zeros_like(raw[0]), raw[1:])
    return jnp.exp(jnp.concatenate([jnp.zeros_like(raw[:1]), rest]))


def emissions_from_multipliers(d: jax.Array | np.ndarray, baseline: np.ndarray | None = None):
    """Telescoped Eqs. 7–9: E'(t) = E_base(t)·cumprod(d)(t) for 2015..2075, shape (..., 61, 5)."""
    base = baseline_scenario_years() if baseline is None else baseline
    xp = jnp if isinstance(d, jax.Array) else np
    return xp.asarray(base) * xp.cumprod(d, axis=-2)


def baseline_scenario_years() -> np.ndarray:
    """SSP2-4.5 controllable emissions for 2015..2075, (61, 5)."""
    start = SCENARIO_START - START_YEAR
    return baseline_controllable()[start : start + N_SCENARIO_YEARS]


def numpy_raw_draws(seed: int, bounds: tuple[float, float] = BOUNDS) -> np.ndarray:
    """The authors' raw draws for scenario ``seed``: (61, 5), first 305 numbers of the stream."""
    rng = np.random.default_rng(seed=int(seed))
    return np.stack([rng.uniform(bounds[0], bounds[1], size=N_SCENARIO_YEARS) for _ in CONTROLLABLE], axis=1)


def numpy_scenario(seed: int, bounds: tuple[float, float] = BOUNDS, alpha: float = ALPHA, smoothing: Smoothing = "log1p") -> np.ndarray:
    """Controllable emissions (61, 5) for 2015..2075 of scenario ``seed`` (authors' stream)."""
    _check(bounds, alpha, smoothing)
    return emissions_from_multipliers(smooth_numpy(numpy_raw_draws(seed, bounds), alpha, smoothing))


def generate(
    key: jax.Array, num_scenarios: int, bounds: tuple[float, float] = BOUNDS, alpha: float = ALPHA, smoothing: Smoothing = "log1p"
) -> jax.Array:
    """``num_scenarios`` scenarios from ``jax.random``: (num_scenarios, 61, 5) emissions."""
    _check(bounds, alpha, smoothing)
    raw = jax.random.uniform(key, (num_scenarios, N_SCENARIO_YEARS, len(CONTROLLABLE)), minval=bounds[0], maxval=bounds[1])
    d = jax.vmap(lambda r: smooth(r, alpha, smoothing))(raw)
    return emissions_from_multipliers(d)


def full_history(controllable_2015_2075: np.ndarray) -> np.ndarray:
    """Controllable emissions 1900..2075 (..., 176, 5): SSP2-4.5 before 2015, the scenario after."""
    arr = np.asarray(controllable_2015_2075)
    prefix = baseline_controllable()[: SCENARIO_START - START_YEAR]
    prefix = np.broadcast_to(prefix, (*arr.shape[:-2], *prefix.shape))
    return np.concatenate([prefix, arr], axis=-2)
