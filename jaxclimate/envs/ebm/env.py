"""The FedRAIN-Lite EBM environments ebm-v1, ebm-v2 and ebm-v3 (docs/ebm.md §3).

Agents are latitude bands (group ``"bands"``) that set the EBM's parameters every step:
diffusivity D, per-latitude OLR coefficients A (in units of 100 W m⁻²) and B, and the albedo
coefficients a0 and a2. Each is rewarded with −(mean squared error) between the model
temperature after the step and the NCEP target over its own band.

* **ebm-v1** — one agent, one model, global observation and reward.
* **ebm-v2** — N agents, each with its **own independent model copy**; agent k observes its
  copy's full profile and is rewarded on band k of its copy. (ebm-v1 vmapped over agents.)
* **ebm-v3** — N agents, **one shared model**; agent k observes and sets only band k
  (A and B on its latitudes), the shared D, a0 and a2 are the agents' means.

With N agents, agent k owns latitudes ``[k·96/N, (k+1)·96/N)`` south to north.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core import struct
from jaxclimate.core.env import Environment, EnvParams, EnvState
from jaxclimate.core.precision import exact_divide
from jaxclimate.core.spaces import Box
from jaxclimate.envs.ebm import physics

GROUP = "bands"

# Action bounds per parameter (docs/ebm.md §3.1); A is in units of 100 W m⁻².
#: The explicit radiation step diverges where Δt·B/C reaches this (docs/ebm.md §7.1).
RADIATION_STABILITY_LIMIT = 2.0
ACTION_BOUNDS = {"D": (0.55, 0.65), "A": (1.4, 4.2), "B": (1.95, 2.05), "a0": (0.3, 0.4), "a2": (0.2, 0.3)}
A_ACTION_SCALE = 100.0  # action units of A -> W m⁻²
OBS_BOUND = 90.0  # declared observation box [-90, 90] °C; never enforced (docs/ebm.md §3.1)


def load_target() -> np.ndarray:
    """The NCEP/NCAR R1 skin-temperature target on the 96-point grid, °C (docs/ebm.md §4)."""
    with resources.files("jaxclimate.envs.ebm").joinpath("data/ncep_skt_target_96.npz").open("rb") as f:
        return np.load(f)["target"].astype(np.float64)


TARGET = load_target()


@struct.dataclass
class EBMState(EnvState):
    """``temperature``: (n_models, 96) °C, one row per model copy (ebm-v2: one per agent)."""

    temperature: jax.Array


def _full(value: float) -> Any:
    return struct.field(default_factory=lambda: np.full(physics.NUM_LAT, value))


@struct.dataclass
class EBMParams(EnvParams):
    """Physical constants, the target, and the reference model parameters.

    ``D``, ``A`` (W m⁻², per latitude), ``B`` (per latitude), ``a0``, ``a2`` are the
    reference parameters: the static baseline runs them, and with
    ``ignore_albedo_actions=True`` the physics uses ``a0``/``a2`` instead of the agents'
    albedo actions (climlab ≤ 0.8.2 behaviour, docs/ebm.md §3.6). ``ice_albedo`` switches on the
    step-function ice albedo of docs/ebm.md §6 (cells colder than ``freezing_temperature`` get
    ``ice_albedo_value``).
    """

    max_steps: int = 200
    heat_capacity: float = physics.HEAT_CAPACITY
    timestep: float = physics.TIMESTEP
    insolation: Any = struct.field(default_factory=lambda: physics.INSOLATION.copy())
    target: Any = struct.field(default_factory=lambda: TARGET.copy())
    initial_temperature: float = physics.INITIAL_TEMPERATURE
    D: float = physics.REF_D
    A: Any = _full(physics.REF_A_WM2)
    B: Any = _full(physics.REF_B)
    a0: float = physics.REF_A0
    a2: float = physics.REF_A2
    ignore_albedo_actions: bool = False
    ice_albedo: bool = False
    ice_albedo_value: float = physics.ICE_ALBEDO
    freezing_temperature: float = physics.FREEZING_TEMPERATURE

    def validate(self) -> None:
        super().validate()
        name = type(self).__name__
        lat = (physics.NUM_LAT,)
        check = functools.partial(struct.check_range, name)
        check("heat_capacity", self.heat_capacity, low=0.0, low_inclusive=False)
        check("timestep", self.timestep, low=0.0, low_inclusive=False)
        check("insolation", self.insolation, low=0.0, shape=lat)
        check("target", self.target, low=-273.15, shape=lat)
        check("initial_temperature", self.initial_temperature, low=-273.15)
        check("D", self.D, low=0.0)
        check("A", self.A, shape=lat)
        check("B", self.B, low=0.0, shape=lat)
        check("a0", self.a0, low=0.0, high=1.0)
        check("a2", self.a2, low=-1.0, high=1.0)
        check("ice_albedo_value", self.ice_albedo_value, low=0.0, high=1.0)
        check("freezing_temperature", self.freezing_temperature, low=-273.15)
        self._check_radiation_step_is_stable(name)

    def _check_radiation_step_is_stable(self, name: str) -> None:
        """The explicit radiation step scales a departure from radiative equilibrium by
        ``1 − Δt·B/C`` per step (docs/ebm.md §7.1): it grows without bound once ``Δt·B/C ≥ 2``,
        for the largest ``B`` the model can run (these parameters' or an agent's action)."""
        dt, C, B = (struct.concrete_value(x) for x in (self.timestep, self.heat_capacity, self.B))
        if dt is None or C is None or B is None:
            return
        b_max = max(float(np.max(B)), ACTION_BOUNDS["B"][1])
        worst = float(np.max(np.asarray(dt, np.float64) / np.asarray(C, np.float64)))
        if worst * b_max >= RADIATION_STABILITY_LIMIT:
            raise ValueError(
                f"{name}: timestep·B/heat_capacity = {worst * b_max:.3g} (B up to {b_max:g}) must stay below "
                f"{RADIATION_STABILITY_LIMIT:g}, or the explicit radiation step diverges (docs/ebm.md §7.1): "
                f"timestep/heat_capacity must be < {RADIATION_STABILITY_LIMIT / b_max:.3g}, got {worst:.3g} (default {physics.TIMESTEP / physics.HEAT_CAPACITY:.3g})"
            )


def model_step(T: jax.Array, D: jax.Array, A: jax.Array, B: jax.Array, a0: jax.Array, a2: jax.Array, params: EBMParams) -> jax.Array:
    """One physics step of one model (docs/ebm.md §2.7) with the switches held in ``params``.

    ``A`` is in W m⁻². Under ``params.ignore_albedo_actions`` the albedo uses
    ``params.a0``/``params.a2`` whatever ``a0``/``a2`` say (docs/ebm.md §3.6)."""
    a0 = jnp.where(params.ignore_albedo_actions, params.a0, a0)
    a2 = jnp.where(params.ignore_albedo_actions, params.a2, a2)
    return physics.ebm_step(
        T,
        D,
        A,
        B,
        a0,
        a2,
        insolation=params.insolation,
        heat_capacity=params.heat_capacity,
        timestep=params.timestep,
        ice_albedo=params.ice_albedo,
        ai=params.ice_albedo_value,
        Tf=params.freezing_temperature,
    )


def simulate(
    params: EBMParams, D: jax.Array, A: jax.Array, B: jax.Array, a0: jax.Array, a2: jax.Array, T0: jax.Array | None = None, dtype: Any = None
) -> jax.Array:
    """Run one model over a forcing sequence (leading axis = steps, A in W m⁻²).

    Returns the trajectory of shape (n_steps + 1, 96); row 0 is ``T0`` (default: the reset
    state ``params.initial_temperature`` everywhere), row t+1 the state after step t."""
    dtype = jnp.result_type(float) if dtype is None else dtype
    D, a0, a2 = (jnp.asarray(x, dtype) for x in (D, a0, a2))
    n = D.shape[0]
    A = jnp.broadcast_to(jnp.asarray(A, dtype), (n, physics.NUM_LAT))
    B = jnp.broadcast_to(jnp.asarray(B, dtype), (n, physics.NUM_LAT))
    if T0 is None:
        T0 = jnp.full(physics.NUM_LAT, params.initial_temperature, dtype)
    T0 = jnp.asarray(T0, dtype)

    def body(T, forcing):
        T_next = model_step(T, *forcing, params)
        return T_next, T_next

    _, Ts = jax.lax.scan(body, T0, (D, A, B, a0, a2))
    return jnp.concatenate([T0[None], Ts], axis=0)


def ordered_mean(x: jax.Array) -> jax.Array:
    """The mean of ``x`` (N,) as NumPy computes it for a few float32 values — summed left to
    right in the input dtype, then divided by N — which is how the original ebm-v3 server
    combined the agents' D, a0 and a2. ``jnp.mean`` reduces in another order and differs by
    one float32 ulp in about a third of steps, enough for an ebm-v3-a6 episode to drift
    ~2e-6 °C from the reference. A ``lax.scan`` over the agent axis fixes the order, and
    ``exact_divide`` the rounding of the division by N."""
    total, _ = jax.lax.scan(lambda acc, v: (acc + v, None), x[0], x[1:])
    return exact_divide(total, x.shape[0])


class EBMEnv(Environment[EBMState, EBMParams]):
    """ebm-v1 / ebm-v2 / ebm-v3 (see module docstring).

    Args:
        version: 1, 2 or 3.
        num_agents: number of latitude-band agents; must divide 96. ebm-v1 has exactly one.
            Defaults: 1 for ebm-v1, 6 for ebm-v2/v3.
        dtype: physics dtype, ``"float32"`` (default, training) or ``"float64"`` (parity;
            needs ``jax_enable_x64``). Observations are always float32, actions are clipped
            and scaled in float32 as in the original (docs/ebm.md §3.1, §7.1).
    """

    def __init__(self, version: int = 1, num_agents: int | None = None, dtype: Any = "float32"):
        if version not in (1, 2, 3):
            raise ValueError(f"EBMEnv.version must be 1, 2 or 3, got {version!r}")
        if num_agents is None:
            num_agents = 1 if version == 1 else 6
        if not isinstance(num_agents, (int, np.integer)) or isinstance(num_agents, bool):
            raise ValueError(f"EBMEnv.num_agents must be an integer, got {num_agents!r}")
        if version == 1 and num_agents != 1:
            raise ValueError(f"EBMEnv.num_agents must be 1 for ebm-v1, got {num_agents}")
        if num_agents < 1 or physics.NUM_LAT % num_agents:
            divisors = [d for d in range(1, physics.NUM_LAT + 1) if physics.NUM_LAT % d == 0]
            raise ValueError(f"EBMEnv.num_agents must divide the {physics.NUM_LAT}-latitude grid (one of {divisors}), got {num_agents}")
        dtype = struct.check_env_dtype("EBMEnv", dtype)
        self.version = int(version)
        self.num_agents = int(num_agents)
        self.dtype = dtype
        self.agents = {GROUP: self.num_agents}
        self.band_width = physics.NUM_LAT // self.num_agents  # latitudes per agent
        # ebm-v3 agents act on their own band only; ebm-v1/v2 agents set all 96 latitudes.
        self.lat_per_action = self.band_width if version == 3 else physics.NUM_LAT
        self.num_models = self.num_agents if version == 2 else 1
        low, high = self._action_bounds()
        self._action_space = Box(low, high, dtype=jnp.float32)
        obs_dim = self.band_width if version == 3 else physics.NUM_LAT
        self._observation_space = Box(-OBS_BOUND, OBS_BOUND, (obs_dim,), dtype=jnp.float32)

    def agent_names(self, group: str) -> list[str]:
        """The latitude band each agent is rewarded on (and, in ebm-v3, acts on), south to
        north (``"90°S–60°S"``, …); ebm-v1's single agent answers for the whole globe."""
        self._check_group(group)
        if self.version == 1:
            return ["globe"]
        edges = np.linspace(-90, 90, self.num_agents + 1)
        label = lambda x: "0°" if x == 0 else f"{abs(x):g}°{'S' if x < 0 else 'N'}"  # noqa: E731
        return [f"{label(lo)}–{label(hi)}" for lo, hi in zip(edges[:-1], edges[1:])]

    @property
    def name(self) -> str:
        return f"ebm-v{self.version}" + ("" if self.version == 1 else f"-a{self.num_agents}")

    @property
    def default_params(self) -> EBMParams:
        return EBMParams()

    def reference_action(self) -> jax.Array:
        """The reference parameters as an action for every agent, (N, act_dim) float32."""
        m = self.lat_per_action
        one = np.concatenate([[physics.REF_D], np.full(m, 2.1), np.full(m, physics.REF_B), [physics.REF_A0, physics.REF_A2]])
        return jnp.asarray(np.tile(one, (self.num_agents, 1)), jnp.float32)

    # --- dynamics ---------------------------------------------------------------------
    def reset_env(self, key: jax.Array, params: EBMParams) -> tuple[dict, EBMState]:
        T = jnp.full((self.num_models, physics.NUM_LAT), params.initial_temperature, self.dtype)
        state = EBMState(time=jnp.zeros((), jnp.int32), temperature=T)
        return self._observe(T), state

    def step_env(self, key: jax.Array, state: EBMState, actions: dict, params: EBMParams):
        D, A, B, a0, a2 = self._model_parameters(actions[GROUP])
        step = jax.vmap(model_step, in_axes=(0, 0, 0, 0, 0, 0, None))
        T = step(state.temperature, D, A, B, a0, a2, params)
        new_state = EBMState(time=state.time + 1, temperature=T)
        rewards = {GROUP: self._rewards(T, params)}
        return self._observe(T), new_state, rewards, jnp.asarray(False), {"profile": self.evaluated_profile(new_state)}

    def _model_parameters(self, actions: jax.Array) -> tuple[jax.Array, ...]:
        """Agents' actions -> per-model (D, A [W m⁻²], B, a0, a2), widened to the physics dtype.

        Clipping, the ×100 of A and (ebm-v3) the means run in float32 as in the original."""
        m = self.lat_per_action
        a = jnp.clip(jnp.asarray(actions, jnp.float32), jnp.asarray(self._action_space.low), jnp.asarray(self._action_space.high))
        D, A, B, a0, a2 = a[:, 0], a[:, 1 : 1 + m] * jnp.float32(A_ACTION_SCALE), a[:, 1 + m : 1 + 2 * m], a[:, -2], a[:, -1]
        if self.version == 3:  # one shared model (docs/ebm.md §3.4)
            D, a0, a2 = (ordered_mean(x)[None] for x in (D, a0, a2))
            A, B = A.reshape(1, physics.NUM_LAT), B.reshape(1, physics.NUM_LAT)
        return tuple(x.astype(self.dtype) for x in (D, A, B, a0, a2))

    def _agent_temperatures(self, T: jax.Array) -> jax.Array:
        """(N, 96): the model each agent lives in (its own copy in ebm-v2, else the shared one)."""
        return T if self.version == 2 else jnp.broadcast_to(T[0], (self.num_agents, physics.NUM_LAT))

    def _rewards(self, T: jax.Array, params: EBMParams) -> jax.Array:
        """r_k = −mean over band k of (T_i − T̂_i)² (docs/ebm.md §3.1); unweighted, °C²."""
        sq_err = (self._agent_temperatures(T) - jnp.asarray(params.target, self.dtype)) ** 2
        return -jnp.mean(self._own_bands(sq_err), axis=-1)

    def _own_bands(self, x: jax.Array) -> jax.Array:
        """(..., N, 96) -> (..., N, 96/N): row k's values on band k (agent k's own latitudes)."""
        n, w = self.num_agents, self.band_width
        return x.reshape(*x.shape[:-2], n, n, w)[..., jnp.arange(n), jnp.arange(n), :]

    def _observe(self, T: jax.Array) -> dict:
        if self.version == 3:
            obs = T[0].reshape(self.num_agents, self.band_width)
        else:
            obs = self._agent_temperatures(T)
        return {GROUP: obs.astype(jnp.float32)}

    def evaluated_profile(self, state: EBMState) -> jax.Array:
        """The 96-point profile the paper evaluates (docs/ebm.md §5.3): ebm-v2 stitches band k from
        agent k's copy; ebm-v1/v3 return the (shared) model state."""
        if self.version != 2:
            return state.temperature[..., 0, :]
        bands = self._own_bands(state.temperature)
        return bands.reshape(*bands.shape[:-2], physics.NUM_LAT)

    # --- helpers ----------------------------------------------------------------------
    def _action_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        m = self.lat_per_action
        layout = [("D", 1), ("A", m), ("B", m), ("a0", 1), ("a2", 1)]
        low = np.concatenate([np.full(k, ACTION_BOUNDS[p][0]) for p, k in layout])
        high = np.concatenate([np.full(k, ACTION_BOUNDS[p][1]) for p, k in layout])
        return low, high
