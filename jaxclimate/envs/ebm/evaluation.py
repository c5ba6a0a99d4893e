"""Evaluation of EBM profiles: area-weighted RMSE per 30° band and the static baseline.

areaWRMSE_b = sqrt( Σ_{i∈b} w_i · (T̂_i − T_i)² ),  w_i = cos φ_i / Σ_{j∈b} cos φ_j   (docs/ebm.md §5.1)

with the six bands [−90, −60), [−60, −30), [−30, 0), [0, 30), [30, 60), [60, 90) degrees,
south to north (16 cells each on the 96-point grid). This is the paper's skill measure; the
training reward is an unweighted MSE, a different quantity.

Also here: the static "climlab" column (reference parameters every step) and the calibrated
static column (:func:`calibrate_static`: the constant action that minimises the summed squared
band errors, fitted by projected Adam through the differentiable model; docs/ebm_calibrated.md).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core import struct
from jaxclimate.core.optim import minimise_in_box, projected_gradient
from jaxclimate.envs.ebm import physics
from jaxclimate.envs.ebm.env import GROUP, EBMParams, simulate

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


# --- the calibrated static column (docs/ebm_calibrated.md) -----------------------------------------------


@struct.dataclass
class Calibration:
    """What :func:`calibrate_static` returns. Gradients are taken with respect to the normalised
    action u (each component's bounds mapped to [0, 1]), in °C² per full range of the component.

    ``action``: (N, act_dim) the best restart's constant action; ``objective``: J there;
    ``objectives``: (restarts,) each restart's final J; ``history``: (restarts, iterations) J before
    each update; ``gradient``: ∇_u J at ``action``; ``projected_gradient``: the same with the
    components that sit at a bound and point out of the box set to zero (zero at a KKT point). On
    a bound the environment's clip passes half the derivative (JAX's rule at a tie); the sign,
    which decides the KKT condition there, is kept."""

    action: jax.Array
    objective: jax.Array
    objectives: jax.Array
    history: jax.Array
    gradient: jax.Array
    projected_gradient: jax.Array


def held_action_profile(env, params: EBMParams, action: jax.Array, n_steps: int | None = None) -> jax.Array:
    """The profile the paper evaluates (``env.evaluated_profile``, docs/ebm.md §5.3) after ``n_steps``
    (default ``params.max_steps``) steps of the constant ``action`` (N, act_dim) from the reset state.
    Steps go through ``env.step_env``: the environment's own clipping, float32 action path, ebm-v3
    means and ebm-v2 stitching, without the auto-reset of the last step."""
    n_steps = int(params.max_steps) if n_steps is None else n_steps
    key = jax.random.PRNGKey(0)  # the EBM's reset and step draw no random numbers
    _, state = env.reset(key, params)

    def body(state, _):
        return env.step_env(key, state, {GROUP: action}, params)[1], None

    state, _ = jax.lax.scan(body, state, None, n_steps)
    return env.evaluated_profile(state)


def calibration_objective(env, params: EBMParams, action: jax.Array, n_steps: int | None = None) -> jax.Array:
    """J(a) = Σ_b areaWRMSE_b(T_n(a))² = Σ_b Σ_{i∈b} w_i (T̂_i − T_n,i(a))², °C²: the paper's six band
    errors of the profile after ``n_steps`` of the held action, squared and summed."""
    profile = held_action_profile(env, params, action, n_steps)
    return jnp.sum(area_weighted_rmse_bands(profile, params.target) ** 2)


def action_box(env) -> tuple[jax.Array, jax.Array]:
    """(low, high), each (N, act_dim) float32: every agent's action bounds (docs/ebm.md §3.1)."""
    space = env.action_space(GROUP)
    shape = (env.num_agents, *space.shape)
    return jnp.broadcast_to(jnp.asarray(space.low), shape), jnp.broadcast_to(jnp.asarray(space.high), shape)


def calibrate_static(
    env, params: EBMParams, key: jax.Array, *, iterations: int = 5000, restarts: int = 4, learning_rate: float = 0.5, n_steps: int | None = None
) -> Calibration:
    """The constant action (one per agent, within its bounds) that minimises the paper's skill
    measure of the profile after ``n_steps`` steps from the reset state (docs/ebm_calibrated.md):

        a(u) = low + (high − low) ⊙ u,  u ∈ [0, 1]^(N × act_dim)
        J(u) = Σ_b areaWRMSE_b(T_n(a(u)))²                        (:func:`calibration_objective`)
        m_k, v_k = Adam moments of ∇J(u_k) (β = 0.9, 0.999)
        u_{k+1} = clip(u_k − η_k · m̂_k / (√v̂_k + ε), 0, 1)          projected Adam
        η_k = η_0 · (cosine decay to 10⁻³ over ``iterations``)

    Projection rather than a sigmoid u = σ(z): at the optimum many components sit on a bound
    (D at its lower bound; over Antarctica A at its upper and B at its lower bound), which projection
    reaches exactly and a sigmoid only approaches as its gradient vanishes (ebm-v1, default
    conditions, 5,000 iterations, 4 restarts: J = 24.40 °C² projected, 24.57 through a sigmoid;
    a float64 L-BFGS-B solve reaches 24.39). ``restarts`` starts u_0 ~ U[0, 1] are ``vmap``ped and
    the lowest final J kept. Traceable: ``jax.jit(lambda k: calibrate_static(env, params, k))`` is
    one compiled program."""
    low, high = action_box(env)
    objective = lambda u: calibration_objective(env, params, low + (high - low) * u, n_steps)  # noqa: E731

    def fit(restart_key):
        u0 = jax.random.uniform(restart_key, low.shape, low.dtype)
        u, history = minimise_in_box(objective, u0, 0.0, 1.0, iterations=iterations, learning_rate=learning_rate)
        value, grad = jax.value_and_grad(objective)(u)
        return u, value, history, grad

    u, values, history, grads = jax.vmap(fit)(jax.random.split(key, restarts))
    best = jnp.argmin(values)
    return Calibration(
        action=low + (high - low) * u[best],
        objective=values[best],
        objectives=values,
        history=history,
        gradient=grads[best],
        projected_gradient=projected_gradient(u[best], grads[best], 0.0, 1.0),
    )


def held_model_parameters(env, params: EBMParams, action: jax.Array) -> dict[str, np.ndarray]:
    """The parameters the physics runs under a held ``action``, one row per model (ebm-v2: per agent's
    copy): D, A (W m⁻², per latitude), B (per latitude), a0, a2 — the albedo ones replaced by
    ``params.a0``/``a2`` under ``ignore_albedo_actions`` (docs/ebm.md §3.6)."""
    D, A, B, a0, a2 = (np.asarray(x, np.float64) for x in env._model_parameters(action))
    if params.ignore_albedo_actions:
        a0, a2 = np.full_like(a0, params.a0), np.full_like(a2, params.a2)
    return {"D": D, "A": A, "B": B, "a0": a0, "a2": a2}
