"""Climate engines: ``init() -> state`` and ``step(state, emissions_t) -> (state, dT_t)``.

An engine turns one year of global controllable emissions (5,) — CO2_FF, CO2_AFOLU, CH4, N2O,
SO2 in the units of ``cicero.CONTROLLABLE_UNITS`` — into that year's global-mean surface air
temperature change ``dT_glob_air`` (K). Years advance by one per step from ``start_year``;
earlier years are SSP2-4.5.

* :class:`SurrogateEngine` — pure JAX (jit / vmap / grad): keeps the last W = 65 years of
  emissions in its state; each step appends E(t), normalises, and runs the network (paper
  §3.3, the authors' scheme), its recurrent encoder over only the years stepped since
  :meth:`~SurrogateEngine.init` (the state after the SSP2-4.5 rows before them is
  precomputed; same result, ~3× faster in the climate-mitigation game).
* :class:`CiceroEngine` — the real CICERO-SCM through ``jax.pure_callback``; usable under
  ``jit`` and ``vmap`` but slow: **every step of every batch row is one oracle run**
  (2015..2075 from the restart snapshot, ~60–80 ms of host CPU), executed one row after
  another (``vmap_method="sequential"``). No gradients. For validation and replay, never
  inside training.
* :class:`CiceroJaxEngine` — CICERO-SCM itself in JAX (:mod:`jaxclimate.climate.cicero_jax`):
  the oracle's numbers to float64 rounding, but jit / vmap / grad like a surrogate.
"""

from __future__ import annotations

from functools import lru_cache, partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.climate import cicero
from jaxclimate.climate import surrogate as sg
from jaxclimate.climate.weights_io import Surrogate, load_surrogate
from jaxclimate.core import struct
from jaxclimate.core.precision import at_physics_precision


@struct.dataclass
class SurrogateEngineState:
    window: jax.Array  # (W, 5) raw emissions of the W years before ``year``
    year: jax.Array  # int32, the next year to step


@struct.dataclass
class CiceroEngineState:
    emissions: jax.Array  # (61, 5) 2015..2075, SSP2-4.5 where not yet stepped
    year: jax.Array


def _check_start_year(start_year: int, low: int, high: int = cicero.END_YEAR) -> int:
    if not (low <= int(start_year) <= high):
        raise ValueError(f"start_year must lie in [{low}, {high}], got {start_year}")
    return int(start_year)


def _check_emissions_shape(emissions_t: jax.Array) -> None:
    if jnp.shape(emissions_t) != (len(cicero.CONTROLLABLE),):
        raise ValueError(f"emissions_t must have shape (5,) ({', '.join(cicero.CONTROLLABLE)}), got {jnp.shape(emissions_t)}")


@at_physics_precision
@partial(jax.jit, static_argnums=0)
def baseline_prefix_carries(config: sg.SurrogateConfig, params: Any, rows: jax.Array) -> Any:
    """The encoder's carry after ``rows[k:]`` (z-scored, (W, 5)) from a zero carry, for k = 0..W
    (k = W: zero). Compiled once per architecture: every climate game made builds this table."""
    parts = sg.RecurrentParts(config, params)
    W = rows.shape[0]

    def carry_after(k):
        def body(carry, i_row):
            i, row = i_row
            advanced = parts.step(carry, row)  # rows before k leave the carry at zero
            return jax.tree_util.tree_map(lambda a, b: jnp.where(i >= k, a, b), advanced, carry), None

        return jax.lax.scan(body, parts.zero_carry(), (jnp.arange(W), rows))[0]

    return jax.vmap(carry_after)(jnp.arange(W + 1))


class SurrogateEngine:
    """The trained surrogate as a pure-JAX climate engine (default: the shipped GRU).

    ``reuse_baseline_prefix`` (GRU/LSTM; default on): after k steps the window is the k
    stepped years preceded by the W − k oldest rows of the initial SSP2-4.5 window, and the
    encoder's state after those baseline rows is the same in every episode. It is computed
    once per k at construction, so a step runs the encoder over only the k new rows instead
    of all W (on average ~half over an episode; the result equals the full pass up to float
    rounding). Derivatives are those of the full pass (a ``custom_jvp``), so ``grad`` works.
    It assumes the state came from :meth:`init` and :meth:`step`, as an environment's does.
    """

    def __init__(self, surrogate: Surrogate | str = "gru", start_year: int = 2016, reuse_baseline_prefix: bool = True):
        self.surrogate = load_surrogate(surrogate) if isinstance(surrogate, str) else surrogate
        self.window_length = self.surrogate.config.window
        self.start_year = _check_start_year(start_year, cicero.START_YEAR + self.window_length)
        self._baseline = cicero.baseline_controllable().astype(np.float32)
        self._mean = self.surrogate.mean.astype(np.float32)
        self._std = self.surrogate.std.astype(np.float32)
        self.reuse_baseline_prefix = bool(reuse_baseline_prefix) and self.surrogate.config.kind in ("gru", "lstm")
        if self.reuse_baseline_prefix:
            self._parts = sg.RecurrentParts(self.surrogate.config, self.surrogate.params)
            rows = sg.normalise(jnp.asarray(self.init().window), self._mean, self._std)
            carries = baseline_prefix_carries(self.surrogate.config, self.surrogate.params, rows)
            self._prefix_carries = jax.tree_util.tree_map(np.asarray, carries)
            self._predict_from_prefix = self._make_predict_from_prefix()

    def init(self) -> SurrogateEngineState:
        i = self.start_year - cicero.START_YEAR
        window = self._baseline[i - self.window_length : i]
        return SurrogateEngineState(window=jnp.asarray(window), year=jnp.asarray(self.start_year, jnp.int32))

    def initial_temperature(self) -> float:
        """The engine's own dT for the year before ``start_year`` (SSP2-4.5 emissions)."""
        i = self.start_year - cicero.START_YEAR  # row of start_year; the window ends one before
        window = self._baseline[i - 1 - self.window_length : i]
        return float(self.surrogate.predict(jnp.asarray(window)))

    @at_physics_precision
    def step(self, state: SurrogateEngineState, emissions_t: jax.Array) -> tuple[SurrogateEngineState, jax.Array]:
        _check_emissions_shape(emissions_t)
        emissions_t = jnp.asarray(emissions_t, jnp.float32)
        x = jnp.concatenate([state.window, emissions_t[None]], axis=0)  # (W+1, 5)
        new = SurrogateEngineState(window=x[1:], year=state.year + 1)
        if not self.reuse_baseline_prefix:
            return new, self.surrogate.predict(x)
        stepped = jnp.clip(state.year - self.start_year, 0, self.window_length)
        return new, self._predict_from_prefix(x, stepped)

    def _make_predict_from_prefix(self):
        """(window (W+1, 5) raw, steps k since init) -> dT, starting from the table's carry."""
        W, parts, table = self.window_length, self._parts, self._prefix_carries

        @jax.custom_jvp
        def predict(x, stepped):
            z = sg.normalise(x, self._mean, self._std)
            carry = jax.tree_util.tree_map(lambda t: jnp.asarray(t)[stepped], table)
            # a while loop: under vmap it runs the largest k of the batch (equal for envs in step)
            carry = jax.lax.fori_loop(0, stepped, lambda i, c: parts.step(c, jax.lax.dynamic_index_in_dim(z, W - stepped + i, keepdims=False)), carry)
            return parts.head(parts.output(carry), z[W])

        @predict.defjvp
        def predict_jvp(primals, tangents):  # the full pass's derivative (``stepped`` is an int: no tangent)
            x, stepped = primals
            return predict(x, stepped), jax.jvp(self.surrogate.predict, (x,), (tangents[0],))[1]

        return predict


_PROCESS_ORACLE: cicero.CiceroOracle | None = None


def _oracle() -> cicero.CiceroOracle:
    global _PROCESS_ORACLE
    if _PROCESS_ORACLE is None:
        _PROCESS_ORACLE = cicero.CiceroOracle()
    return _PROCESS_ORACLE


def _host_temperature(emissions: np.ndarray, year: np.ndarray) -> np.ndarray:
    """Host side of the callback: one oracle run; T of ``year``. Causality (T(t) depends only
    on emissions up to t) makes the not-yet-stepped years irrelevant."""
    T = _oracle().run(np.asarray(emissions, np.float64))
    i = int(np.clip(int(year) - cicero.START_YEAR, 0, cicero.N_YEARS - 1))
    return np.asarray(T[i], dtype=emissions.dtype)


class CiceroEngine:
    """CICERO-SCM itself as a climate engine (host callback; see module docstring)."""

    uses_host_callback = True
    host_callback_advice = (
        "CICERO-SCM runs on the host, about 15 env-steps/s: train on --engine cicero-jax (the same "
        "model in JAX, exact, compiled with the policy) or the default surrogate"
    )

    def __init__(self, start_year: int = 2016):
        cicero.require_ciceroscm()
        self.start_year = _check_start_year(start_year, cicero.SCENARIO_START)
        start = cicero.SCENARIO_START - cicero.START_YEAR
        self._baseline = cicero.baseline_controllable()[start:]

    def init(self) -> CiceroEngineState:
        dtype = jnp.result_type(float)
        return CiceroEngineState(emissions=jnp.asarray(self._baseline, dtype), year=jnp.asarray(self.start_year, jnp.int32))

    def initial_temperature(self) -> float:
        """CICERO-SCM's dT for the year before ``start_year`` on SSP2-4.5 (one oracle run)."""
        return float(_oracle().run(self._baseline)[self.start_year - 1 - cicero.START_YEAR])

    def step(self, state: CiceroEngineState, emissions_t: jax.Array) -> tuple[CiceroEngineState, jax.Array]:
        _check_emissions_shape(emissions_t)
        row = jnp.clip(state.year - cicero.SCENARIO_START, 0, cicero.N_SCENARIO_YEARS - 1)
        emissions = state.emissions.at[row].set(jnp.asarray(emissions_t, state.emissions.dtype))
        dT = jax.pure_callback(_host_temperature, jax.ShapeDtypeStruct((), emissions.dtype), emissions, state.year, vmap_method="sequential")
        return CiceroEngineState(emissions=emissions, year=state.year + 1), dT


@lru_cache(maxsize=4)
def _cicero_spin_up(start_year: int) -> tuple[Any, float]:
    """CICERO-SCM in JAX run over SSP2-4.5 from 1900 to ``start_year`` − 1 in float64: the
    state (NumPy leaves) and that year's dT_glob_air. Once per process and start year, shared
    by the engines of every dtype."""
    from jaxclimate.climate import cicero_jax

    with cicero_jax.x64_context():
        exact = cicero_jax.CiceroJAX(dtype=jnp.float64)
        prefix = cicero.baseline_controllable()[: start_year - cicero.START_YEAR]
        state, outputs = jax.jit(exact.run_years)(exact.zero_state(), prefix)
        return jax.tree_util.tree_map(np.asarray, state), float(outputs["dT_glob_air"][-1])


class CiceroJaxEngine:
    """CICERO-SCM itself in JAX (:mod:`jaxclimate.climate.cicero_jax`) as a climate engine:
    exact, ``jit``/``vmap``/``grad``-able, no host callback.

    The state at ``start_year`` (the model run over SSP2-4.5 from 1900) is computed once per
    process and start year, in float64 (:func:`_cicero_spin_up`), and cast to the engine's ``dtype``; each ``step`` then simulates one
    year with the environment's global controllable emissions and returns ``dT_glob_air``.
    """

    def __init__(self, start_year: int = 2016, dtype: Any = None):
        from jaxclimate.climate import cicero_jax

        self.start_year = _check_start_year(start_year, cicero.START_YEAR + 1)
        self.dtype = jnp.dtype(dtype) if dtype is not None else jnp.zeros(()).dtype
        self.model = cicero_jax.CiceroJAX(dtype=self.dtype)
        state, self._initial_temperature = _cicero_spin_up(self.start_year)
        self._initial = jax.tree_util.tree_map(lambda x: jnp.asarray(x, self.dtype if np.issubdtype(x.dtype, np.floating) else x.dtype), state)

    def init(self) -> Any:
        return self._initial

    def initial_temperature(self) -> float:
        """dT_glob_air of the year before ``start_year`` on SSP2-4.5."""
        return self._initial_temperature

    @property
    def parameters(self) -> dict[str, float]:
        """The ocean parameters a run may set (``step``'s ``params``) and their nominal values."""
        from jaxclimate.climate import cicero_jax

        return {k: float(self.model.constants.pamset_udm[k]) for k in cicero_jax.OCEAN_PARAMETERS}

    def step(
        self, state: Any, emissions_t: jax.Array, params: dict[str, Any] | None = None
    ) -> tuple[Any, jax.Array]:  # CiceroJAX.step sets the precision
        """One year; ``params``: values of :attr:`parameters` to use instead of the nominal ones
        (e.g. a drawn climate-sensitivity parameter ``lambda``, K per W m⁻²). The state at
        ``start_year`` stays the nominal model's: a draw changes the response from then on."""
        _check_emissions_shape(emissions_t)
        state, outputs = self.model.step(state, emissions_t, params)
        return state, outputs["dT_glob_air"]


@struct.dataclass
class PrescribedEngineState:
    year: jax.Array


class PrescribedEngine:
    """Returns a fixed temperature path, whatever the emissions: ``dT[year − 1900]``.

    For tests and debugging — e.g. feed a stored CICERO-SCM run to an environment to check
    its emissions and rewards without running the oracle."""

    def __init__(self, temperatures: Any, start_year: int = 2016):
        temperatures = np.asarray(temperatures, dtype=np.float64)
        if temperatures.shape != (cicero.N_YEARS,) or not np.all(np.isfinite(temperatures)):
            raise ValueError(f"PrescribedEngine.temperatures must be finite with shape ({cicero.N_YEARS},) for 1900..2075")
        self.start_year = _check_start_year(start_year, cicero.START_YEAR + 1)
        self._temperatures = temperatures

    def initial_temperature(self) -> float:
        return float(self._temperatures[self.start_year - 1 - cicero.START_YEAR])

    def init(self) -> PrescribedEngineState:
        return PrescribedEngineState(year=jnp.asarray(self.start_year, jnp.int32))

    def step(self, state: PrescribedEngineState, emissions_t: jax.Array) -> tuple[PrescribedEngineState, jax.Array]:
        _check_emissions_shape(emissions_t)
        table = jnp.asarray(self._temperatures, jnp.result_type(float))
        T = table[jnp.clip(state.year - cicero.START_YEAR, 0, cicero.N_YEARS - 1)]
        return PrescribedEngineState(year=state.year + 1), T


def rollout(engine: Any, emissions: jax.Array) -> jax.Array:
    """dT for a path of yearly emissions (n, 5) from ``engine.start_year`` (a ``lax.scan``)."""
    _, temps = jax.lax.scan(engine.step, engine.init(), jnp.asarray(emissions))
    return temps
