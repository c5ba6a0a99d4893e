"""RICE-N as a jaxclimate environment (docs/rice_n.md §1–§10).

N regions (group ``"regions"``, 27 by default or any subset) choose savings, mitigation,
export limit, tariffs and import bids as a ``MultiDiscrete`` vector of 10-level entries
(value = level/10), plus the negotiation protocol's entries. An episode is 20 activity steps
of 5 years (2015 → 2115); with negotiation each activity step is preceded by a proposal and
an evaluation step (60 env steps). The reward is the region's utility at activity steps and
0 at negotiation steps (undiscounted; docs/rice_n.md §10).

Observations are the reference's flat feature vectors (docs/rice_n.md §9): 1043 features for 27
regions without negotiation, 1207 with the bilateral protocol (1180 with clubs), each state
value divided by a fixed normaliser in float32 exactly as the reference does, so an
observation rebuilt from a recorded state equals the recorded one bit for bit.
``observation="compact"`` gives instead the feature set of jice, the RICE-N authors' JAX port
(docs/rice_n.md §9.3): 46 features per region at 20 regions, 53 at 27, each equal to the flat
observation's feature of the same value.
``action_mask(group, state, params)`` gives the negotiation masks in the padded-logits layout
IPPO uses; ``flat_action_mask`` the reference's flat 570/1164-entry layout.

The climate is a climate module (``climate=``: ``"dice"``, the reference's DICE-2016 boxes, by
default; ``"cicero-jax"`` or ``"gru"`` for CICERO-SCM or its surrogate; docs/climate_modules.md).

Stepping a level outside the action space is not checked inside the jitted step (the
reference's evaluation needs level 10 = rate 1.0); ``action_space(...).contains`` rejects it.
:func:`replay` plays a recorded action sequence and returns the state history keyed as the
reference's recorded episodes; :func:`state_from_record` builds a state from such a record.
"""

from __future__ import annotations

import functools
from typing import Any, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core import struct
from jaxclimate.core.env import Capabilities, Environment
from jaxclimate.core.factored import FactoredBox, FactoredObs
from jaxclimate.core.lockstep import lockstep_switch
from jaxclimate.core.precision import exact_divide
from jaxclimate.core.spaces import Box, MultiDiscrete
from jaxclimate.envs.rice_n import uncertainty as rice_uncertainty
from jaxclimate.envs.rice_n.climate import climate_module
from jaxclimate.envs.rice_n.dynamics import DiceClimateState, RiceState, activity_step, decode_activity, initial_state
from jaxclimate.envs.rice_n.params import NUM_LEVELS, NUM_REGIONS, RiceParams, check_regions, load_data, rice_params
from jaxclimate.envs.rice_n.protocol import apply_levers, lowest_levels, resolve_protocol, stage_heads

GROUP = "regions"
OBSERVATION_LAYOUTS = ("flat", "factored", "compact")

#: Observation normalisers (docs/rice_n.md §9.1), one per state field.
NORMS = {key: float(v) for key, v in load_data()["observation_norms"].items()}
#: The reference's state keys (recorded episodes) -> RiceState fields.
RECORD_KEYS = {
    "global_temperature": "temperature",
    "global_carbon_mass": "carbon_mass",
    "global_exogenous_emissions": "forcing_exogenous",
    "global_land_emissions": "land_emissions",
    "capital_all_regions": "capital",
    "labor_all_regions": "labor",
    "production_factor_all_regions": "tfp",
    "intensity_all_regions": "intensity",
    "current_balance_all_regions": "balance",
    "capital_depreciation_all_regions": "capital_depreciation",
    "savings_all_regions": "savings",
    "mitigation_rate_all_regions": "mitigation",
    "max_export_limit_all_regions": "export_limit",
    "mitigation_cost_all_regions": "mitigation_cost",
    "damages_all_regions": "damages",
    "abatement_cost_all_regions": "abatement_cost",
    "production_all_regions": "production",
    "gross_output_all_regions": "gross_output",
    "investment_all_regions": "investment",
    "consumption_all_regions": "consumption",
    "utility_all_regions": "utility",
    "social_welfare_all_regions": "social_welfare",
    "reward_all_regions": "reward",
    "desired_imports": "desired_imports",
    "scaled_imports": "scaled_imports",
    "tariffed_imports": "tariffed_imports",
    "future_tariffs": "tariffs",
    "tariffs": "tariffs",
    "tariff_revenue": "tariff_revenue",
}
#: The negotiation keys every recorded episode has (zeros without negotiation): the reference's
#: bilateral state, (N,) for the minimum mitigation, (N, N) for the others. A protocol's state
#: fills those it has with its ``reference_record()`` (docs/protocols.md).
NEGOTIATION_RECORD_KEYS = ("minimum_mitigation_rate_all_regions", "promised_mitigation_rate", "requested_mitigation_rate", "proposal_decisions")
#: Record keys stored with a trailing axis of length 1.
_TRAILING_AXIS = ("global_exogenous_emissions", "global_land_emissions", "tariff_revenue")
# Public per-region features in observation order (docs/rice_n.md §9.1), with their normaliser keys.
_PUBLIC = (
    ("capital", "capital_all_regions"),
    ("capital_depreciation", "capital_depreciation_all_regions"),
    ("labor", "labor_all_regions"),
    ("gross_output", "gross_output_all_regions"),
    ("investment", "investment_all_regions"),
    ("consumption", "consumption_all_regions"),
    ("savings", "savings_all_regions"),
    ("mitigation", "mitigation_rate_all_regions"),
    ("export_limit", "max_export_limit_all_regions"),
    ("balance", "current_balance_all_regions"),
)
_PRIVATE = (
    ("tfp", "production_factor_all_regions"),
    ("intensity", "intensity_all_regions"),
    ("mitigation_cost", "mitigation_cost_all_regions"),
    ("damages", "damages_all_regions"),
    ("abatement_cost", "abatement_cost_all_regions"),
    ("production", "production_all_regions"),
    ("utility", "utility_all_regions"),
    ("social_welfare", "social_welfare_all_regions"),
    ("reward", "reward_all_regions"),
)

#: The compact observation's own economy (docs/rice_n.md §9.3): jice's per-region features in the
#: flat observation's order, the first six public features of the flat layout (every region's
#: there, the region's own here), then seven of its private ones.
_COMPACT_PUBLIC = _PUBLIC[:6]  # capital, capital_depreciation, labor, gross_output, investment, consumption
_COMPACT_PRIVATE = _PRIVATE[:7]  # tfp, intensity, mitigation_cost, damages, abatement_cost, production, utility
_GLOBAL_NAMES = ("temperature[0]", "temperature[1]", "carbon_mass[0]", "carbon_mass[1]", "carbon_mass[2]", "forcing_exogenous", "land_emissions")


def binary_ids(num_regions: int) -> np.ndarray:
    """(N, B) the regions' positions 0..N−1 in binary, most significant bit first, with
    B = N.bit_length() bits as jice writes them (5 for 16..31 regions): the compact
    observation's region id."""
    bits = num_regions.bit_length()
    return (np.arange(num_regions)[:, None] >> np.arange(bits - 1, -1, -1)) & 1


def _scaled(x: jax.Array, norm_key: str, dtype: Any = jnp.float32) -> jax.Array:
    """float32(x) / normaliser, correctly rounded as the reference divides (observations then
    equal the recorded ones bit for bit; ``exact_divide`` says on which backends)."""
    return exact_divide(jnp.asarray(x).astype(jnp.float32).astype(dtype), NORMS[norm_key])


@functools.lru_cache(maxsize=None)
def _normalisers(num_regions: int, negotiation: bool, compact: bool = False) -> np.ndarray:
    """The shared features' normalisers in feature order, float32 (as the reference's float32
    division uses them): global climate (7), the counters (timestep 100 and, with
    negotiation, the stage 1), the public per-region blocks (N each) and the tariffs (N²);
    ``compact``: the mitigation block (N) alone after the counters."""
    counts = [("global_temperature", 2), ("global_carbon_mass", 3), ("global_exogenous_emissions", 1), ("global_land_emissions", 1)]
    counts += [("timestep", 1)] + ([(None, 1)] if negotiation else [])
    if compact:
        counts += [("mitigation_rate_all_regions", num_regions)]
    else:
        counts += [(key, num_regions) for _, key in _PUBLIC] + [("tariffs", num_regions * num_regions)]
    norms = np.concatenate([np.full(count, 1.0 if key is None else NORMS[key]) for key, count in counts]).astype(np.float32)
    norms.flags.writeable = False
    return norms


def _columns(blocks: Sequence[jax.Array], rows: int) -> jax.Array:
    """``concatenate(blocks, axis=1)`` for (rows, w) blocks and shared (w,) blocks (the same
    for every row), built as nested ``where``s over zero-padded blocks: XLA:CPU writes the
    (27, 1043) observation about twice as fast this way as from a concatenation of
    broadcasts (measured when the observation is stored every step)."""
    widths = [b.shape[-1] for b in blocks]
    total = sum(widths)
    column = jnp.arange(total)
    out, end = None, total
    for block, width in zip(reversed(blocks), reversed(widths)):  # innermost: the last block
        start = end - width
        padded = jnp.pad(block, [(0, 0)] * (block.ndim - 1) + [(start, total - end)])
        out = jnp.broadcast_to(padded, (rows, total)) if out is None else jnp.where(column < end, padded, out)
        end = start
    return out


class RiceN(Environment[RiceState, RiceParams]):
    """RICE-N (see module docstring).

    Args:
        protocol: the negotiation protocol (docs/protocols.md): a registered name — ``"none"``
            (default), ``"bilateral"`` (the reference) or ``"club"`` (see
            :mod:`jaxclimate.envs.rice_n.negotiation`) —, a
            :class:`~jaxclimate.envs.rice_n.protocol.Protocol` object, or
            ``"package.module:Name"`` / ``"file.py:Name"`` of one in the user's own code.
        regions: region indices 0..26 (paper Table 1 ID − 1) for a subset, as a list or tuple
            (``[0, 5, 12, 20]``) or a comma-separated string (``"0,5,12,20"``, the form
            ``--env-set regions=0,5,12,20`` passes); default all 27.
        dtype: ``"float32"`` (training) or ``"float64"`` (parity; needs ``jax_enable_x64``).
        num_activity_steps: activity steps per episode (20 in the reference: 2015 → 2115);
            fewer make quick experiments.
        mask_ignored_heads: with negotiation, ``action_mask`` also pins the heads the next
            stage ignores to level 0, so a masked policy's log-probability and entropy count
            only the heads that act (docs/rice_n.md §17's stage-relevance mask; a learning choice, off
            by default as in the reference; ``flat_action_mask`` is unaffected).
        observation: ``"flat"`` (default): each region's (F,) vector as the reference lays it
            out; ``"factored"``: a :class:`~jaxclimate.core.factored.FactoredObs` with the
            1007 features every region sees (climate, counters, all regions' public economy,
            tariffs) stored once per env and each region's own 36 (one-hot, private; plus its
            negotiation features) — 14× less to write per step at 27 regions, the same
            information (``observation_space(GROUP).flatten(obs)`` gives the flat one bit for bit);
            ``"compact"``: each region's (F,) vector of jice's feature set (the RICE-N authors'
            JAX port; docs/rice_n.md §9.3): a binary region id, the climate and counters,
            every region's mitigation rate and the region's own economy (13 values) — 46
            features at 20 regions, 53 at 27 — plus the protocol's features with negotiation,
            each equal to the flat observation's feature of the same value.
        climate: the climate module (docs/climate_modules.md): ``"dice"`` (default, the
            reference's DICE-2016 boxes), ``"cicero-jax"`` (CICERO-SCM in JAX, multi-gas) or
            ``"gru"`` (its shipped surrogate), or a climate-module object with 5-year steps
            from 2015. The observation keeps its layout under every module.
    """

    def __init__(
        self,
        protocol: Any = "none",
        regions: Sequence[int] | None = None,
        dtype: Any = "float32",
        num_activity_steps: int = 20,
        mask_ignored_heads: bool = False,
        observation: str = "flat",
        climate: Any = "dice",
    ):
        self.protocol = resolve_protocol(protocol)
        self.regions = check_regions(regions)
        self.num_regions = n = int(self.regions.size)
        dtype = struct.check_env_dtype("RiceN", dtype)
        if not isinstance(num_activity_steps, (int, np.integer)) or not 1 <= num_activity_steps <= 20:
            raise ValueError(f"RiceN.num_activity_steps must be an integer in 1..20, got {num_activity_steps!r}")
        if not isinstance(mask_ignored_heads, (bool, np.bool_)):
            raise ValueError(f"RiceN.mask_ignored_heads must be a bool, got {mask_ignored_heads!r}")
        if observation not in OBSERVATION_LAYOUTS:
            raise ValueError(f"RiceN.observation must be one of {OBSERVATION_LAYOUTS}, got {observation!r}")
        self.observation_layout = observation
        self.factored = observation == "factored"
        self.compact = observation == "compact"
        self.dtype = dtype
        self.climate_name = climate if isinstance(climate, str) else type(climate).__name__
        self.climate = climate_module(climate, dtype)
        # the climate factors read DICE-2016's Φ_T; another module keeps its own parameters
        uncertainties = rice_uncertainty.UNCERTAINTIES if self.climate_name == "dice" else rice_uncertainty.DAMAGE_ONLY
        self._capabilities = Capabilities(action_mask=True, uncertainties=uncertainties)
        self.num_activity_steps = int(num_activity_steps)
        self.mask_ignored_heads = bool(mask_ignored_heads)
        self.num_stages = len(self.protocol.stages)
        self.steps_per_activity = self.num_stages + 1
        self.episode_length = self.num_activity_steps * self.steps_per_activity
        self.agents = {GROUP: n}
        heads = stage_heads(self.protocol, n)
        self.nvec = np.concatenate([np.full(3 + 2 * n, NUM_LEVELS)] + heads).astype(np.int64)
        bounds = np.cumsum([0, 3 + 2 * n] + [h.size for h in heads])
        self.stage_slices = {name: (int(a), int(b)) for name, a, b in zip(("activity",) + self.protocol.stages, bounds[:-1], bounds[1:])}
        self._action_space = MultiDiscrete(self.nvec)
        # the features' widths only: computed, they ran ~150 eager programs (2 s on a CPU) per env made
        start = jax.eval_shape(lambda: self._initial_state(self._params()))
        shared_dim = int(jax.eval_shape(lambda s: self._shared_features(s, self.compact), start).shape[-1])
        own_dim = sum(int(x.shape[-1]) for x in jax.eval_shape(lambda s: self._own_features(s, self.compact), start))
        self.obs_dim = shared_dim + own_dim
        if self.factored:
            self._observation_space = FactoredBox(shared_dim, own_dim, insert_at=n, dtype=dtype)
        else:
            self._observation_space = Box(-np.inf, np.inf, (self.obs_dim,), dtype=dtype)

    @property
    def negotiation_on(self) -> bool:
        """Whether negotiation stages precede the activity steps."""
        return self.num_stages > 0

    def _params(self) -> RiceParams:
        params = rice_params(self.regions, negotiation=self.protocol.default_params())
        return params.replace(max_steps=self.episode_length)  # the real horizon

    def _initial_state(self, params: RiceParams) -> RiceState:
        return initial_state(params, self.dtype, self.climate, self.protocol.init(self.num_regions, self.dtype))

    def agent_names(self, group: str) -> list[str]:
        """``"region 1"``, … by the paper's Table 1 region ID (index + 1 in the full 27)."""
        self._check_group(group)
        return [f"region {int(r) + 1}" for r in self.regions]

    @property
    def name(self) -> str:
        suffix = "" if self.protocol.name == "none" else f"-{self.protocol.name}"
        regions = "" if self.num_regions == NUM_REGIONS else f"[{self.num_regions} regions]"
        climate = "" if self.climate_name == "dice" else f"[{self.climate_name}]"
        return f"rice-n{suffix}{regions}{climate}"

    @property
    def default_params(self) -> RiceParams:
        return self._params()

    # --- dynamics ---------------------------------------------------------------------------
    def reset_env(self, key: jax.Array, params: RiceParams) -> tuple[dict, RiceState]:
        state = self._initial_state(params)
        return {GROUP: self._observe(state)}, state

    def step_env(self, key: jax.Array, state: RiceState, actions: dict, params: RiceParams):
        state, info = self.transition(state, actions[GROUP], params)
        return {GROUP: self._observe(state)}, state, {GROUP: state.reward}, info["done"], info

    def observation(self, state: RiceState, params: RiceParams | None = None) -> dict:
        """The observation is a function of the state alone: ``Environment.step`` then selects
        the reset state first and builds one observation per step (the observation, 27 × 1043
        floats, is most of a step's memory traffic)."""
        return {GROUP: self._observe(state)}

    def stage_of(self, time: jax.Array) -> jax.Array:
        """The stage of env step ``time``: 0 activity, s = 1..S the protocol's s-th stage."""
        return time % self.steps_per_activity if self.negotiation_on else jnp.zeros_like(time)

    def transition(self, state: RiceState, levels: jax.Array, params: RiceParams) -> tuple[RiceState, dict]:
        """One env step without observation or reset: (state, info). ``levels`` (N, A) ints."""
        params = struct.cast_numeric(params, self.dtype)
        levels = jnp.asarray(levels, jnp.int32)
        k = state.time + 1
        stage = self.stage_of(k)
        state = state.replace(time=k)
        if self.negotiation_on:
            # Under vmap a lockstep switch: environments reset together share the stage, so each
            # step runs one branch (the activity step on one step in S + 1), not all and a select.
            branches = (self._activity,) + tuple(self._stage_update(name) for name in self.protocol.stages)
            state = lockstep_switch(stage, branches, state, levels, params)
        else:
            state = self._activity(state, levels, params)
        is_activity = stage == 0
        state = state.replace(reward=jnp.where(is_activity, state.reward, 0.0))  # docs/rice_n.md §2.1: not carried
        done = jnp.logical_and(is_activity, state.activity_step >= self.num_activity_steps)
        info = {"done": done, "stage": stage, "activity": is_activity, "temperature": state.temperature[0], "gross_output": state.gross_output}
        return state, info

    def _activity(self, state: RiceState, levels: jax.Array, params: RiceParams) -> RiceState:
        """The 5-year step with the protocol's enforced floors applied to the chosen rates."""
        rates = decode_activity(levels, self.num_regions, self.dtype)
        rates = apply_levers(rates, self.protocol.enforced(state.negotiation, params))
        return activity_step(state, rates, params, self.climate)

    def _stage_update(self, name: str):
        start, stop = self.stage_slices[name]

        def update(state: RiceState, levels: jax.Array, params: RiceParams) -> RiceState:
            return state.replace(negotiation=self.protocol.update(name, state.negotiation, levels[:, start:stop], state, params))

        return update

    # --- observation and masks -------------------------------------------------------------
    def _observe(self, state: RiceState) -> jax.Array | FactoredObs:
        """The (N, F) features of docs/rice_n.md §9.1 (or their factored form, see the class docstring;
        or the compact ones of §9.3) with the reference's arithmetic: the global and public
        features as float32 divisions, the private ones in the env dtype, of the state rounded
        to float32."""
        if self.factored:
            return FactoredObs(shared=self._shared_features(state), own=_columns(self._own_features(state), self.num_regions))
        if self.compact:
            return self.observe_compact(state)
        return self.observe(state)

    def _shared_features(self, state: RiceState, compact: bool = False) -> jax.Array:
        """(1007,) for 27 regions: global climate, counters, every region's public economy and
        the tariff matrix — the same for every region (``compact``: the climate, counters and
        every region's mitigation rate, 35 for 27 regions). One division: the float32 values
        laid out as the features, divided by the vector of their normalisers
        (:func:`_normalisers`), correctly rounded as the reference divides each (``exact_divide``)."""
        k = state.time
        glob = [state.temperature, state.carbon_mass, state.forcing_exogenous[None], state.land_emissions[None]]
        if compact:
            public = [state.mitigation]
        else:
            public = [getattr(state, f) for f, _ in _PUBLIC] + [state.tariffs.reshape(-1)]
        counters = [k[None]]  # the timestep k/100 from the integer, divided in the env dtype
        if self.negotiation_on:
            counters.append(self.stage_of(k)[None])  # the stage, as it is (normaliser 1)
        as32 = [jnp.asarray(x).astype(jnp.float32) for x in glob + public]
        norms = _normalisers(self.num_regions, self.negotiation_on, compact)
        if self.dtype == jnp.float32:  # the counters are float32 too: one vector, one division
            raw = jnp.concatenate(as32[:4] + [c.astype(jnp.float32) for c in counters] + as32[4:])
            return exact_divide(raw, norms)
        # float64 (parity): the state's features divided in float32 as the reference, the counters in float64
        width = len(counters)
        scaled = exact_divide(jnp.concatenate(as32), np.delete(norms, range(7, 7 + width))).astype(self.dtype)
        counters = exact_divide(jnp.concatenate(counters).astype(self.dtype), norms[7 : 7 + width].astype(np.float64))
        return jnp.concatenate([scaled[:7], counters, scaled[7:]])

    def _own_features(self, state: RiceState, compact: bool = False) -> list[jax.Array]:
        """[region id, private and negotiation features (N, ·)]: the flat observation is
        ``id ‖ shared ‖ the rest``. The id is one-hot (N, N), or ``compact`` binary (N, B), and
        the compact observation's own economy (N, 13) is computed as the flat observation
        computes those features (the public ones divided in float32, the private ones in the
        env dtype), so each equals its flat counterpart bit for bit."""
        n = self.num_regions
        # The reference divides its private (scalar) features in float64 (NumPy-1 scalar promotion).
        private_fields = _COMPACT_PRIVATE if compact else _PRIVATE
        raw = jnp.stack([jnp.asarray(getattr(state, f)).astype(jnp.float32).astype(self.dtype) for f, _ in private_fields], axis=1)
        norms = np.asarray([NORMS[key] for _, key in private_fields])
        if not compact:
            parts = [jnp.eye(n, dtype=self.dtype), exact_divide(raw, norms)]
        else:
            public = jnp.stack([jnp.asarray(getattr(state, f)).astype(jnp.float32) for f, _ in _COMPACT_PUBLIC], axis=1)
            public_norms = np.asarray([NORMS[key] for _, key in _COMPACT_PUBLIC], np.float32)
            if self.dtype == jnp.float32:  # both halves are float32 divisions then: one division
                own = exact_divide(jnp.concatenate([public, raw], axis=1), np.concatenate([public_norms, norms.astype(np.float32)]))
            else:
                own = jnp.concatenate([exact_divide(public, public_norms).astype(self.dtype), exact_divide(raw, norms)], axis=1)
            parts = [jnp.asarray(binary_ids(n), self.dtype), own]
        negotiation = self.protocol.features(state.negotiation)
        if negotiation is not None:
            parts.append(jnp.asarray(negotiation).astype(self.dtype))
        return parts

    def observe(self, state: RiceState) -> jax.Array:
        """The flat (N, F) observation of ``state`` in the reference's layout, whatever
        ``observation`` is (for parity tests and analysis)."""
        one_hot, *rest = self._own_features(state)
        return _columns([one_hot, self._shared_features(state), *rest], self.num_regions)

    def observe_compact(self, state: RiceState) -> jax.Array:
        """The compact (N, F) observation of ``state`` (docs/rice_n.md §9.3), whatever
        ``observation`` is: binary id ‖ climate and counters ‖ every region's mitigation ‖ own
        economy ‖ the protocol's features."""
        ids, *rest = self._own_features(state, compact=True)
        return _columns([ids, self._shared_features(state, compact=True), *rest], self.num_regions)

    def feature_names(self) -> list[str]:
        """The names of one region's features in the flat per-agent vector of this layout
        (``"flat"`` and ``"factored"``: the reference's layout, §9.1; ``"compact"``: §9.3):
        state fields, ``[j]`` the j-th region of the subset, ``time`` the env-step counter k
        (/100), ``stage`` the negotiation stage, ``negotiation[m]`` the protocol's m-th feature."""
        n = self.num_regions
        counters = ["time"] + (["stage"] if self.negotiation_on else [])
        if self.compact:
            names = [f"id_bit[{b}]" for b in range(n.bit_length())] + list(_GLOBAL_NAMES) + counters
            names += [f"mitigation[{j}]" for j in range(n)] + [f for f, _ in _COMPACT_PUBLIC + _COMPACT_PRIVATE]
        else:
            names = [f"one_hot[{j}]" for j in range(n)] + list(_GLOBAL_NAMES) + counters
            names += [f"{f}[{j}]" for f, _ in _PUBLIC for j in range(n)] + [f"tariffs[{i},{j}]" for i in range(n) for j in range(n)]
            names += [f for f, _ in _PRIVATE]
        return names + [f"negotiation[{m}]" for m in range(self.obs_dim - len(names))]

    @property
    def capabilities(self) -> Capabilities:
        """Action masks (:meth:`action_mask`) and the parameter uncertainties of its climate."""
        return self._capabilities

    def action_mask(self, group: str, state: RiceState, params: RiceParams | None = None) -> jax.Array:
        """Allowed levels (N, A, 10), True = allowed; 2-level heads use columns 0–1 (docs/rice_n.md §8, §17).
        The activity heads allow the levels at or above the protocol's floors; with
        ``mask_ignored_heads`` the heads the next stage does not read allow level 0 only."""
        self._check_group(group)
        return self._mask(state, params, self.mask_ignored_heads)

    def flat_action_mask(self, state: RiceState, params: RiceParams | None = None) -> jax.Array:
        """The reference's flat int32 mask (N, Σnvec), one block of nvec[h] entries per head in
        head order: 570 / 1164 entries for 27 regions without / with bilateral negotiation."""
        mask = self._mask(state, params, ignored_heads=False)
        blocks, start = [], 0
        for h in range(1, self.nvec.size + 1):  # runs of heads with the same number of levels
            if h == self.nvec.size or self.nvec[h] != self.nvec[start]:
                blocks.append(mask[:, start:h, : int(self.nvec[start])].reshape(self.num_regions, -1))
                start = h
        return jnp.concatenate(blocks, axis=1).astype(jnp.int32)

    def lowest_allowed_levels(self, state: RiceState, params: RiceParams | None = None) -> jax.Array:
        """(N, A) the lowest level each head allows (the protocol's floors; 0 elsewhere): raising a
        choice to it is the cheapest way to play only allowed actions."""
        params = self.default_params if params is None else params
        lowest = lowest_levels(self.protocol.floors(state.negotiation, params), self.num_regions, self.nvec.size)
        return (
            jnp.zeros((self.num_regions, self.nvec.size), jnp.int32)
            if lowest is None
            else jnp.broadcast_to(lowest[..., 0], (self.num_regions, self.nvec.size))
        )

    def _mask(self, state: RiceState, params: RiceParams | None, ignored_heads: bool) -> jax.Array:
        n, heads = self.num_regions, self.nvec.size
        params = self.default_params if params is None else params
        levels = jnp.arange(NUM_LEVELS)
        valid = levels < jnp.asarray(self.nvec)[:, None]  # (A, 10): padding of the heads with fewer levels
        lowest = lowest_levels(self.protocol.floors(state.negotiation, params), n, heads)
        mask = jnp.broadcast_to(valid, (n, heads, NUM_LEVELS)) if lowest is None else valid & (levels >= lowest)
        if ignored_heads and self.negotiation_on:  # an ignored head allows level 0 only, even the mitigation head
            mask = jnp.where(self._acting_heads(self.stage_of(state.time + 1)), mask, levels == 0)
        return mask

    def _acting_heads(self, stage: jax.Array) -> jax.Array:
        """(A, 1) booleans: the heads read at ``stage``."""
        bounds = np.array(list(self.stage_slices.values()))
        head = jnp.arange(self.nvec.size)[:, None]
        start, stop = jnp.asarray(bounds[:, 0])[stage], jnp.asarray(bounds[:, 1])[stage]
        return (head >= start) & (head < stop)

    # --- helpers ---------------------------------------------------------------------------
    def constant_actions(self, **levels: int) -> jax.Array:
        """The same level vector for every region: ``savings``, ``mitigation``, ``export_limit``
        levels (ints, 10 = rate 1.0 as the reference's extremal policies), everything else 0."""
        index = {"savings": 0, "mitigation": 1, "export_limit": 2}
        unknown = set(levels) - set(index)
        if unknown:
            raise ValueError(f"constant_actions: unknown entries {sorted(unknown)}; use savings, mitigation, export_limit")
        row = np.zeros(self.nvec.size, np.int32)
        for name, level in levels.items():
            if not 0 <= int(level) <= 10:
                raise ValueError(f"constant_actions: {name} level must be in 0..10 (10 = rate 1.0), got {level}")
            row[index[name]] = int(level)
        return jnp.broadcast_to(jnp.asarray(row), (self.num_regions, row.size))


# --- recorded episodes: state injection and replay -------------------------------------------------


def state_to_record(state: RiceState) -> dict[str, jax.Array]:
    """The state keyed as the reference's recorded episodes (FORMAT.md §2.1); works on a
    history with leading axes. The negotiation keys come from the protocol state's
    ``reference_record()`` where it has one, zeros otherwise (as the reference records them
    without negotiation)."""
    record = {key: getattr(state, field) for key, field in RECORD_KEYS.items()}
    for key in _TRAILING_AXIS:
        record[key] = record[key][..., None]
    record["timestep"] = state.time[..., None]
    record["activity_timestep"] = state.activity_step[..., None]
    reference_record = getattr(state.negotiation, "reference_record", None)
    negotiation = reference_record() if reference_record is not None else {}
    for key in NEGOTIATION_RECORD_KEYS:
        if key not in negotiation:
            shape = state.capital.shape if key.startswith("minimum") else state.capital.shape + state.capital.shape[-1:]
            negotiation[key] = jnp.zeros(shape, state.capital.dtype)
    return record | {key: negotiation[key] for key in NEGOTIATION_RECORD_KEYS}


def state_from_record(record: Mapping[str, Any], row: int, dtype: Any = "float64", protocol: Any = "bilateral") -> RiceState:
    """Build a :class:`RiceState` from row ``row`` of a recorded episode (``state__*`` arrays of
    a golden file, with or without the prefix). Needed for one-step (teacher-forced) checks.
    The reference records DICE-2016 episodes: the state's climate is a :class:`DiceClimateState`;
    and the bilateral protocol's state (zeros without negotiation), read by ``protocol``'s
    ``state_from_record`` (another protocol: its initial state unless it reads the record)."""

    def get(key: str) -> np.ndarray:
        for name in (f"state__{key}", key):
            if name in record:
                return np.asarray(record[name])[row]
        raise KeyError(f"state_from_record: record has no {key!r}")

    values = {field: jnp.asarray(get(key), dtype) for key, field in RECORD_KEYS.items()}
    for key in _TRAILING_AXIS:  # the record's (…, 1) columns
        values[RECORD_KEYS[key]] = values[RECORD_KEYS[key]][..., 0]
    n = values["capital"].shape[0]
    activity = jnp.asarray(get("activity_timestep").reshape(()), jnp.int32)
    climate = DiceClimateState(step=activity, **{f: values.pop(f) for f in ("temperature", "carbon_mass", "forcing_exogenous")})
    return RiceState(
        time=jnp.asarray(get("timestep").reshape(()), jnp.int32),
        activity_step=activity,
        climate=climate,
        negotiation=resolve_protocol(protocol).state_from_record(get, n, jnp.dtype(dtype)),
        **values,
    )


def replay(env: RiceN, actions: Any, params: RiceParams | None = None, state: RiceState | None = None) -> dict[str, np.ndarray]:
    """Play ``actions`` (E, N, A) integer levels through ``env`` from ``state`` (default: the
    reset state) without auto-reset. Returns numpy arrays keyed like the reference's recorded
    episodes: ``state__<key>`` with E + 1 rows (row 0 = the start), ``obs`` (E+1, N, F),
    ``action_mask`` (E+1, N, Σnvec), ``rewards`` (E, N), ``done`` (E,), ``stage`` (E,)."""
    params = env.default_params if params is None else params
    actions = jnp.asarray(actions, jnp.int32)
    if actions.ndim != 3 or actions.shape[1:] != (env.num_regions, env.nvec.size):
        raise ValueError(f"replay: actions must have shape (steps, {env.num_regions}, {env.nvec.size}), got {actions.shape}")
    if state is None:
        state = env._initial_state(params)
    history = _replay_jit(env, actions, params, state)
    return jax.tree_util.tree_map(np.asarray, history)


def _replay(env: RiceN, actions: jax.Array, params: RiceParams, state: RiceState) -> dict:
    def body(s, levels):
        s, info = env.transition(s, levels, params)
        return s, (s, s.reward, info["done"], info["stage"])

    _, (states, rewards, done, stage) = jax.lax.scan(body, state, actions)
    states = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b]), state, states)
    out = {f"state__{key}": value for key, value in state_to_record(states).items()}
    out["state__stage"] = env.stage_of(states.time)[:, None]
    out["stage"] = stage
    out["rewards"] = rewards
    out["done"] = done
    out["obs"] = jax.vmap(env.observe)(states)
    out["action_mask"] = jax.vmap(env.flat_action_mask)(states)
    return out


_replay_jit = jax.jit(_replay, static_argnums=0)
