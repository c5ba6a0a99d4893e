"""One-dimensional Budyko–Sellers energy balance model (FedRAIN-Lite, paper Eq. 1).

    C ∂T/∂t = (1 − α(φ))·Q(φ) − (A(φ) + B(φ)·T) + (D / cos φ) ∂/∂φ (cos φ ∂T/∂φ)

discretised as climlab's ``EBM_annual(num_lat=96)`` without ice albedo (docs/ebm.md §2): 96 cells
uniform in latitude, annual-mean insolation, forward-Euler radiation then backward-Euler
(implicit) diffusion with zero flux through the poles. Latitude index 0 is the south pole.

Everything constant is computed once here in float64 NumPy (grid, insolation, Legendre P2,
the geometric part of the diffusion operator); only the scalar ``D`` changes per step, so the
implicit system is rebuilt from three length-96 vectors and solved as a tridiagonal system.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core.linalg import tridiagonal_solve

# --- grid (docs/ebm.md §2.1) ------------------------------------------------------------------------
NUM_LAT = 96
DLAT_DEG = 180.0 / NUM_LAT  # 1.875°
DLAT_RAD = np.pi / NUM_LAT
LAT_DEG = -90.0 + DLAT_DEG * (np.arange(NUM_LAT) + 0.5)
LAT_BOUNDS_DEG = -90.0 + DLAT_DEG * np.arange(NUM_LAT + 1)
LAT_RAD = np.deg2rad(LAT_DEG)

# --- constants (docs/ebm.md §2.2) -------------------------------------------------------------------
EARTH_RADIUS = 6.373e6  # m; cancels on the uniform grid (docs/ebm.md §2.6)
RHO_WATER, CP_WATER, MIXED_LAYER_DEPTH = 1000.0, 4181.3, 10.0
HEAT_CAPACITY = RHO_WATER * CP_WATER * MIXED_LAYER_DEPTH  # 4.1813e7 J m⁻² °C⁻¹
DAYS_PER_YEAR = 365.2422
SECONDS_PER_YEAR = DAYS_PER_YEAR * 86400.0
TIMESTEP = SECONDS_PER_YEAR / 90.0  # 350 632.512 s
SOLAR_CONSTANT = 1365.2  # W m⁻²
ECCENTRICITY, LONG_PERIHELION_DEG, OBLIQUITY_DEG = 0.017236, 281.37, 23.446

# Reference parameters of the environments (docs/ebm.md §2.9, §3.1).
REF_D, REF_A_WM2, REF_B, REF_A0, REF_A2 = 0.6, 210.0, 2.0, 0.354, 0.25
INITIAL_TEMPERATURE = 50.0  # °C at every latitude on reset (docs/ebm.md §2.8)

# Step-function ice albedo defaults (docs/ebm.md §6).
ICE_ALBEDO, FREEZING_TEMPERATURE = 0.62, -10.0


def legendre_p2(x: np.ndarray) -> np.ndarray:
    """P2(x) = (3x² − 1)/2."""
    return 0.5 * (3.0 * x**2 - 1.0)


P2_SIN_LAT = legendre_p2(np.sin(LAT_RAD))


def daily_mean_insolation(
    lat_rad: np.ndarray,
    day: np.ndarray,
    *,
    solar_constant: float = SOLAR_CONSTANT,
    eccentricity: float = ECCENTRICITY,
    long_perihelion_deg: float = LONG_PERIHELION_DEG,
    obliquity_deg: float = OBLIQUITY_DEG,
    days_per_year: float = DAYS_PER_YEAR,
) -> np.ndarray:
    """Daily-mean top-of-atmosphere insolation (W m⁻²), shape ``(len(day), len(lat))``.

    docs/ebm.md §2.4 (Berger 1978 true longitude; vernal equinox on day 80).
    """
    e = eccentricity
    varpi = np.deg2rad(long_perihelion_deg)
    eps = np.deg2rad(obliquity_deg)
    beta = np.sqrt(1.0 - e**2)
    lambda_m0 = -2.0 * (
        (e / 2 + e**3 / 8) * (1 + beta) * np.sin(-varpi)
        - (e**2 / 4) * (0.5 + beta) * np.sin(-2 * varpi)
        + (e**3 / 8) * (1.0 / 3.0 + beta) * np.sin(-3 * varpi)
    )
    lambda_m = lambda_m0 + 2 * np.pi * (np.asarray(day, dtype=np.float64) - 80.0) / days_per_year
    anomaly = lambda_m - varpi
    lam = lambda_m + (2 * e - e**3 / 4) * np.sin(anomaly) + (5.0 / 4.0) * e**2 * np.sin(2 * anomaly) + (13.0 / 12.0) * e**3 * np.sin(3 * anomaly)
    delta = np.arcsin(np.sin(eps) * np.sin(lam))[:, None]  # declination, (days, 1)
    irradiance = (((1 + e * np.cos(lam - varpi)) / (1 - e**2)) ** 2)[:, None]
    phi = np.asarray(lat_rad)[None, :]
    sunlit_part = np.abs(phi) + np.abs(delta) < np.pi / 2
    with np.errstate(invalid="ignore"):
        h0_partial = np.arccos(np.clip(-np.tan(phi) * np.tan(delta), -1.0, 1.0))
    h0 = np.where(sunlit_part, h0_partial, np.where(phi * delta > 0, np.pi, 0.0))
    cos_zenith = np.maximum(0.0, (h0 * np.sin(phi) * np.sin(delta) + np.cos(phi) * np.cos(delta) * np.sin(h0)) / np.pi)
    return solar_constant * irradiance * cos_zenith


def annual_mean_insolation(lat_rad: np.ndarray = LAT_RAD, n_days: int = 90, **orbit: float) -> np.ndarray:
    """Annual-mean insolation Q(φ) (W m⁻²): the mean of the daily means on the ``n_days``
    days d_k = k·Y/n_days a model with Δt = Y/n_days visits (docs/ebm.md §2.4)."""
    days = np.arange(n_days) * orbit.get("days_per_year", DAYS_PER_YEAR) / n_days
    return daily_mean_insolation(lat_rad, days, **orbit).mean(axis=0)


INSOLATION = annual_mean_insolation()


def _diffusion_geometry() -> tuple[np.ndarray, np.ndarray]:
    """Geometric coefficients g_lower, g_upper (rad⁻²) of L = (D/C)·G (docs/ebm.md §2.6).

    The pole faces carry no flux, so g_lower[0] = g_upper[-1] = 0 exactly."""
    cos_center = np.cos(LAT_RAD)
    cos_faces = np.cos(np.deg2rad(LAT_BOUNDS_DEG))
    g_lower = cos_faces[:-1] / (cos_center * DLAT_RAD**2)
    g_upper = cos_faces[1:] / (cos_center * DLAT_RAD**2)
    g_lower[0] = 0.0
    g_upper[-1] = 0.0
    return g_lower, g_upper


G_LOWER, G_UPPER = _diffusion_geometry()


def diffusion_operator(D: float, heat_capacity: float = HEAT_CAPACITY) -> np.ndarray:
    """The dense tridiagonal operator L (s⁻¹), dT/dt|diff = L·T (docs/ebm.md §2.6); for tests and
    analysis (the step itself never forms it)."""
    k = D / heat_capacity
    L = np.diag(-k * (G_LOWER + G_UPPER))
    L += np.diag(k * G_LOWER[1:], -1) + np.diag(k * G_UPPER[:-1], 1)
    return L


def albedo(
    T: jax.Array, a0: jax.Array, a2: jax.Array, ice_albedo: jax.Array = False, ai: jax.Array = ICE_ALBEDO, Tf: jax.Array = FREEZING_TEMPERATURE
) -> jax.Array:
    """α = a0 + a2·P2(sin φ) (docs/ebm.md §2.3); with ``ice_albedo`` cells colder than ``Tf``
    (strictly) get ``ai`` instead (climlab's step-function albedo, docs/ebm.md §6)."""
    p2 = jnp.asarray(P2_SIN_LAT, T.dtype)
    smooth = a0 + a2 * p2
    return jnp.where(jnp.logical_and(ice_albedo, T < Tf), jnp.asarray(ai, T.dtype), smooth)


def ebm_step(
    T: jax.Array,
    D: jax.Array,
    A: jax.Array,
    B: jax.Array,
    a0: jax.Array,
    a2: jax.Array,
    *,
    insolation: jax.Array,
    heat_capacity: jax.Array = HEAT_CAPACITY,
    timestep: jax.Array = TIMESTEP,
    ice_albedo: jax.Array = False,
    ai: jax.Array = ICE_ALBEDO,
    Tf: jax.Array = FREEZING_TEMPERATURE,
) -> jax.Array:
    """Advance the temperature profile ``T`` (°C, shape (96,)) by one step (docs/ebm.md §2.7).

    ``A`` is in W m⁻² and ``B`` in W m⁻² °C⁻¹ (scalars or per latitude); all parameters of
    the step apply within it. Arithmetic runs in ``T.dtype``.

        T* = Tⁿ + Δt/C · ((1 − α)·Q − (A + B·Tⁿ))      forward Euler, radiation (Eq. 1)
        (I − Δt·L(D)) Tⁿ⁺¹ = T*                        backward Euler, diffusion
    """
    dtype = T.dtype
    cast = lambda x: jnp.asarray(x, dtype)  # noqa: E731
    dt, C = cast(timestep), cast(heat_capacity)
    alpha = albedo(T, cast(a0), cast(a2), ice_albedo, ai, Tf)
    absorbed = (1.0 - alpha) * cast(insolation)
    olr = cast(A) + cast(B) * T
    T_star = T + (dt / C) * (absorbed - olr)
    return implicit_diffusion(T_star, cast(D), dt, C)


def implicit_diffusion(T_star: jax.Array, D: jax.Array, dt: jax.Array, C: jax.Array) -> jax.Array:
    """Solve (I − Δt·L(D)) T = T* by elimination (:func:`jaxclimate.core.linalg.tridiagonal_solve`).

    M = I − k·G with k = Δt·D/C: sub-diagonal −k·g_lower, diagonal 1 + k·(g_lower + g_upper),
    super-diagonal −k·g_upper; strictly diagonally dominant, so no pivoting is needed."""
    dtype = T_star.dtype
    k = dt * D / C
    g_lower, g_upper = jnp.asarray(G_LOWER, dtype), jnp.asarray(G_UPPER, dtype)
    lower = -k * g_lower  # lower[0] = 0: row 0 has no southern neighbour
    upper = -k * g_upper  # upper[-1] = 0
    diag = 1.0 + k * (g_lower + g_upper)
    return tridiagonal_solve(lower, diag, upper, T_star)


def cos_weighted_mean(T: jax.Array) -> jax.Array:
    """Area (cos φ) weighted global mean over the last axis."""
    w = jnp.asarray(np.cos(LAT_RAD), T.dtype)
    return jnp.sum(T * w, axis=-1) / jnp.sum(w)
