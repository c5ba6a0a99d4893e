"""The climate-mitigation game (paper §3.3 and Appendix D; docs/climate_mitigation.md §3).

N countries (group ``"countries"``) choose, every year 2016..2050, four levers — energy,
methane and agriculture efforts (0 / 0.5 / 1) and adaptation spending (0 / 0.03 / 0.08) — as a
``MultiDiscrete([3, 3, 3, 3])`` action. The paper's three modules:

* **emissions** — each country's five controllable emissions (CO2_FF, CO2_AFOLU, CH4, N2O,
  SO2) follow the SSP2-4.5 growth, bent by its efforts through the policy matrix M
  (Eqs. 20–23), clipped at 0 as the authors' code does (docs/climate_mitigation.md §3.4);
* **climate** — any climate engine (``init``/``step``) turns the global emissions into
  ΔT(t): the shipped GRU surrogate by default, CICERO-SCM itself (``engine="cicero"``) for
  validation;
* **impact** — damages c^c·ψ·ΔT⁴·(1 − P) with a prevention stock P built by adaptation,
  quadratic lever costs and a linear adaptation cost, all scaled by η (Eqs. 27–31), plus a
  15-year look-ahead of damages at baseline growth folded into the last reward (Eqs. 32–33).

The step order is the authors' (docs/climate_mitigation.md §3.9). Choices where paper and code differ (docs/climate_mitigation.md §3.11):

* look-ahead prevention: ``decaying_lookahead_prevention=False`` (default) holds P(2050)
  constant as the authors' code does; ``True`` uses the paper's min(Pmax, P(2050)·φ^u);
* emissions are clipped at 0 per country (code), so AFOLU is 0 from 2053 onwards;
* the reset observation carries the engine's own ΔT(2015) (0.7252 K for the shipped GRU,
  0.7251 K for CICERO-SCM) where the authors' code puts a placeholder (0.5 surrogate /
  0.0 CICERO); set ``initial_obs_temperature`` to reproduce the placeholder;
* one share per country for every gas (code); the 35 uncontrolled species stay at SSP2-4.5.

Episodes terminate after 35 decisions; ``max_steps`` is that horizon (the time limit and the
end of the game coincide: ``terminated`` says the episode ended, nothing is bootstrapped).
The look-ahead runs the engine 15 more years inside the terminal step as a ``lax.while_loop``
whose trip count is 15 at termination and 0 otherwise: under ``vmap`` the loop runs only on
steps where some environment of the batch terminates, so a batch of
synchronised episodes pays 15 extra engine steps once per episode, not on every step. A
``while_loop`` is not reverse-differentiable: gradients through a whole episode go through
:meth:`ClimateMitigation.year` (continuous levers) and :meth:`ClimateMitigation.lookahead`
without ``run`` (a ``lax.scan``), as the cooperative planner (``planner.py``) does.

``info`` carries what the policy-consistency replay needs (docs/climate_mitigation.md §4): the step's global
emissions and engine temperature, and at the terminal step the 15 look-ahead years.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.climate import cicero
from jaxclimate.core import struct
from jaxclimate.core.env import Capabilities, Environment
from jaxclimate.core.spaces import Box, MultiDiscrete
from jaxclimate.envs.climate_mitigation.params import HORIZON, NUM_GASES, NUM_LEVERS, MitigationParams, MitigationState
from jaxclimate.envs.climate_mitigation.presets import scenario_preset
from jaxclimate.envs.climate_mitigation.uncertainty import uncertainties

GROUP = "countries"
START_YEAR = 2016  # first decision year
LOOKAHEAD = 15  # look-ahead years 2051..2065 (U)
ACTION_NVEC = (3, 3, 3, 3)  # energy, methane, agriculture, adaptation level indices
LEVER_NAMES = ("energy", "methane", "agriculture", "adaptation")


def baseline_arrays() -> dict[str, np.ndarray]:
    """SSP2-4.5 controllable emissions the game needs, float64:

    ``e2015`` (5,), ``decisions`` (35, 5) for 2016..2050, ``growth`` (50, 5): g(t) =
    E(t)/E(t−1) for 2016..2065 (docs/climate_mitigation.md §3.4, §6)."""
    base = cicero.baseline_controllable()
    i0 = START_YEAR - cicero.START_YEAR
    years = HORIZON + LOOKAHEAD
    return {
        "e2015": base[i0 - 1].copy(),
        "decisions": base[i0 : i0 + HORIZON].copy(),
        "growth": base[i0 : i0 + years] / base[i0 - 1 : i0 + years - 1],
    }


# --- the three modules as small pure functions ------------------------------------------------


def update_prevention(stock: jax.Array, adaptation: jax.Array, decay: jax.Array, max_stock: jax.Array) -> jax.Array:
    """P(t) = clip(φ·P(t−1) + p(t), 0, Pmax)  (Eq. 27), updated before the year's damage."""
    return jnp.clip(decay * stock + adaptation, 0.0, max_stock)


def update_emissions(emissions: jax.Array, growth: jax.Array, efforts: jax.Array, policy_matrix: jax.Array) -> jax.Array:
    """Ē_i(t) = max(0, Ē_i(t−1) ⊙ g(t) ⊙ (1 + k_i,t·M))  (Eqs. 20–23; the clip is the code's).

    ``emissions`` (N, 5), ``growth`` (5,), ``efforts`` (N, 3), ``policy_matrix`` (3, 5)."""
    return jnp.maximum(emissions * growth * (1.0 + efforts @ policy_matrix), 0.0)


def climate_damage(temperature: jax.Array, stock: jax.Array, params: "MitigationParams") -> jax.Array:
    """η·c^c·ψ·ΔT⁴·(1 − P) per country (Eqs. 28–29)."""
    return params.reward_scale * params.damage_cost * params.damage_coefficient * temperature**4 * (1.0 - stock)


def policy_cost(efforts: jax.Array, adaptation: jax.Array, params: "MitigationParams") -> jax.Array:
    """η·(Σ_l c^l·k_l² + c^p·p) per country (Eqs. 30–31)."""
    levers = jnp.sum(params.lever_cost * efforts**2, axis=-1)
    return params.reward_scale * (levers + params.adaptation_cost * adaptation)


def lookahead_stock(stock: jax.Array, years_ahead: jax.Array, params: "MitigationParams") -> jax.Array:
    """P^la(u): P(2050) held constant (code, default) or min(Pmax, P(2050)·φ^u) (paper, Eq. 33)."""
    decayed = jnp.minimum(params.max_prevention, stock * params.prevention_decay**years_ahead)
    return jnp.where(params.decaying_lookahead_prevention, decayed, stock)


# --- the environment --------------------------------------------------------------------------


def make_engine(engine: Any) -> Any:
    """``"gru"`` / ``"lstm"`` / ``"tcn"`` (shipped surrogates), ``"surrogate"`` (= GRU),
    ``"cicero"`` (the oracle by host callback), ``"cicero-jax"`` (CICERO-SCM in JAX), or an engine object with ``init``/``step``/``start_year``/``initial_temperature``."""
    from jaxclimate.climate.engines import CiceroEngine, CiceroJaxEngine, SurrogateEngine

    if isinstance(engine, str):
        if engine == "cicero-jax":
            return CiceroJaxEngine(start_year=START_YEAR)
        if engine == "cicero":
            return CiceroEngine(start_year=START_YEAR)
        if engine in ("surrogate", "gru", "lstm", "tcn"):
            return SurrogateEngine("gru" if engine == "surrogate" else engine, start_year=START_YEAR)
        raise ValueError(
            f"climate-mitigation engine must be 'gru', 'lstm', 'tcn', 'surrogate', 'cicero', 'cicero-jax' or an engine object, got {engine!r}"
        )
    for attr in ("init", "step", "start_year", "initial_temperature"):
        if not hasattr(engine, attr):
            raise ValueError(f"climate-mitigation engine object must have '{attr}' (see jaxclimate.climate.engines)")
    if engine.start_year != START_YEAR:
        raise ValueError(f"climate-mitigation engine must start in {START_YEAR}, got start_year={engine.start_year}")
    return engine


class ClimateMitigation(Environment[MitigationState, MitigationParams]):
    """The climate-mitigation game (see module docstring).

    Args:
        scenario: ``"i"`` (N = 4, homogeneous) or ``"ii"`` (N = 10, heterogeneous); sets the
            defaults of :class:`MitigationParams`.
        engine: the climate engine (see :func:`make_engine`); default the shipped GRU.
        dtype: emissions/reward dtype, ``"float32"`` (training) or ``"float64"`` (parity;
            needs ``jax_enable_x64``). The surrogate itself always runs in float32.
    """

    def __init__(self, scenario: str = "i", engine: Any = "gru", dtype: Any = "float32"):
        self.scenario = scenario
        self._preset = scenario_preset(scenario)
        self.dtype = dtype = struct.check_env_dtype("ClimateMitigation", dtype)
        self.engine = make_engine(engine)

        self._capabilities = Capabilities(
            uncertainties=uncertainties(self.engine),
            host_callback=getattr(self.engine, "host_callback_advice", "") if getattr(self.engine, "uses_host_callback", False) else None,
        )
        self.num_agents = int(self._preset["shares"].shape[0])
        self.agents = {GROUP: self.num_agents}
        self._baseline = {k: jnp.asarray(v, dtype) for k, v in baseline_arrays().items()}
        self.obs_dim = 2 + 2 * NUM_GASES * self.num_agents + self.num_agents
        self._observation_space = Box(-np.inf, np.inf, (self.obs_dim,), dtype=dtype)
        self._action_space = MultiDiscrete(ACTION_NVEC)
        self._initial_temperature: float | None = None

    @property
    def name(self) -> str:
        return f"climate-mitigation-{self.scenario}"

    @property
    def capabilities(self) -> Capabilities:
        """The engine's parameter uncertainties, and its host callback where it has one."""
        return self._capabilities

    @property
    def default_params(self) -> MitigationParams:
        if self._initial_temperature is None:  # one engine evaluation, cached
            self._initial_temperature = self.engine.initial_temperature()
        return MitigationParams(initial_obs_temperature=self._initial_temperature, **self._preset)

    # --- dynamics ---------------------------------------------------------------------
    def reset_env(self, key: jax.Array, params: MitigationParams) -> tuple[dict, MitigationState]:
        n, dt = self.num_agents, self.dtype
        shares = jnp.asarray(params.shares, dt)
        state = MitigationState(
            time=jnp.zeros((), jnp.int32),
            emissions=shares[:, None] * self._baseline["e2015"],
            deviation=jnp.zeros((n, NUM_GASES), dt),
            prevention=jnp.zeros((n,), dt),
            temperature=jnp.asarray(params.initial_obs_temperature, dt),
            engine_state=self.engine.init(),
        )
        return self._observe(state, params), state

    def step_env(self, key: jax.Array, state: MitigationState, actions: dict, params: MitigationParams):
        params = struct.cast_numeric(params, self.dtype)
        efforts, adaptation = self.levers(actions[GROUP], params)
        new_state, cost, global_emissions = self.year(state, efforts, adaptation, params)
        terminated = new_state.time >= HORIZON
        lookahead = self.lookahead(new_state, params, run=terminated)
        rewards = -(cost + lookahead["cost"])  # Eq. 32: the look-ahead sits inside r(2050)
        info = {
            "temperature": new_state.temperature,
            "global_emissions": global_emissions,
            "lookahead_temperatures": lookahead["temperatures"],
            "lookahead_emissions": lookahead["emissions"],
        }
        return self._observe(new_state, params), new_state, {GROUP: rewards}, terminated, info

    def year(
        self, state: MitigationState, efforts: jax.Array, adaptation: jax.Array, params: MitigationParams
    ) -> tuple[MitigationState, jax.Array, jax.Array]:
        """One decision year with continuous levers — efforts k (N, 3), adaptation spending p
        (N,) — in the authors' order: prevention, emissions, deviation, climate, cost (Eqs.
        20–31). Returns the new state, each country's cost (damage + policy, no look-ahead)
        and the global emissions (5,). ``step_env`` calls it with the levels' values; the
        cooperative planner (``planner.py``) with any values in the levers' ranges."""
        t = state.time
        prevention = update_prevention(state.prevention, adaptation, params.prevention_decay, params.max_prevention)
        emissions = update_emissions(state.emissions, self._baseline["growth"][t], efforts, params.policy_matrix)
        deviation = state.deviation + emissions - params.shares[:, None] * self._baseline["decisions"][t]  # Eq. 26
        global_emissions = jnp.sum(emissions, axis=0)
        engine_state, temperature = self.engine_step(state.engine_state, global_emissions, params)
        temperature = jnp.asarray(temperature, self.dtype)
        cost = climate_damage(temperature, prevention, params) + policy_cost(efforts, adaptation, params)
        new_state = MitigationState(
            time=t + 1, emissions=emissions, deviation=deviation, prevention=prevention, temperature=temperature, engine_state=engine_state
        )
        return new_state, cost, global_emissions

    def engine_step(self, engine_state: Any, global_emissions: jax.Array, params: MitigationParams) -> tuple[Any, jax.Array]:
        """The engine's year; with ``params.engine_params`` (e.g. a drawn ``{"lambda": …}``) for
        an engine that has parameters (``cicero-jax``), refused in one line for one that has none."""
        if params.engine_params is None:
            return self.engine.step(engine_state, global_emissions)
        if not hasattr(self.engine, "parameters"):
            raise ValueError(
                f"{self.name}: engine_params {sorted(params.engine_params)} need an engine with parameters (engine='cicero-jax'), not {type(self.engine).__name__}"
            )
        return self.engine.step(engine_state, global_emissions, params.engine_params)

    def levers(self, actions: jax.Array, params: MitigationParams) -> tuple[jax.Array, jax.Array]:
        """Level indices (N, 4) -> efforts k (N, 3) and adaptation spending p (N,)."""
        actions = jnp.asarray(actions, jnp.int32)
        efforts = jnp.asarray(params.effort_levels, self.dtype)[actions[:, :NUM_LEVERS]]
        adaptation = jnp.asarray(params.adaptation_levels, self.dtype)[actions[:, NUM_LEVERS]]
        return efforts, adaptation

    def lookahead(self, state: MitigationState, params: MitigationParams, run: jax.Array | None = None) -> dict:
        """Eqs. 32–33: 15 more years after ``state`` at baseline growth (clipped), damages only,
        per country. ``run`` (the terminal flag): a ``lax.while_loop`` of 15 iterations when
        true and none otherwise (see module docstring); ``None``: always the 15 years, as a
        ``lax.scan`` (reverse-differentiable, for the planner)."""
        growth = self._baseline["growth"]

        def year(carry, u):
            E, es, cost = carry
            E = jnp.maximum(E * growth[HORIZON + u], 0.0)
            es, T = self.engine_step(es, jnp.sum(E, axis=0), params)
            T = jnp.asarray(T, self.dtype)
            cost = cost + climate_damage(T, lookahead_stock(state.prevention, u + 1, params), params)
            return (E, es, cost), (jnp.sum(E, axis=0), T)

        start = (state.emissions, state.engine_state, jnp.zeros_like(state.prevention))
        if run is None:
            (_, _, cost), (Es, Ts) = jax.lax.scan(year, start, jnp.arange(LOOKAHEAD))
            return {"cost": cost, "emissions": Es, "temperatures": Ts}

        def body(carry):
            u, inner, Es, Ts = carry
            inner, (E_u, T_u) = year(inner, u)
            return u + 1, inner, Es.at[u].set(E_u), Ts.at[u].set(T_u)

        trip_count = jnp.where(run, LOOKAHEAD, 0)
        empty = (jnp.zeros((LOOKAHEAD, NUM_GASES), self.dtype), jnp.zeros((LOOKAHEAD,), self.dtype))
        _, (_, _, cost), Es, Ts = jax.lax.while_loop(lambda c: c[0] < trip_count, body, (jnp.zeros((), jnp.int32), start, *empty))
        return {"cost": cost, "emissions": Es, "temperatures": Ts}

    def _observe(self, state: MitigationState, params: MitigationParams) -> dict:
        """[T_last, τ, Ē/σ_E (agent-major), D/σ_D, P], identical for every country (docs/climate_mitigation.md §3.8)."""
        dt = self.dtype
        row = jnp.concatenate(
            [
                jnp.asarray(state.temperature, dt)[None],
                (state.time / HORIZON).astype(dt)[None],
                (state.emissions / jnp.asarray(params.emission_scale, dt)).reshape(-1),
                (state.deviation / jnp.asarray(params.deviation_scale, dt)).reshape(-1),
                state.prevention,
            ]
        )
        return {GROUP: jnp.broadcast_to(row, (self.num_agents, self.obs_dim))}
