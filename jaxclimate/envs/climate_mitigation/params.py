"""The climate-mitigation game's state and parameters (docs/climate_mitigation.md §3.3,
§3.6–§3.8): what the environment, its uncertainties, its relaxation and its planner share."""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np

from jaxclimate.climate import cicero
from jaxclimate.core import struct
from jaxclimate.core.env import EnvParams, EnvState
from jaxclimate.envs.climate_mitigation.presets import scenario_preset

HORIZON = 35  # decisions 2016..2050 (H)
NUM_LEVERS = 3  # energy, methane, agriculture
NUM_GASES = len(cicero.CONTROLLABLE)
#: σ_E: mean of the five 2015 global baseline emissions, computed in float32 by the authors.
EMISSION_SCALE = 91.2339096069336
#: σ_D = 35·σ_E (docs/climate_mitigation.md §3.8).
DEVIATION_SCALE = 3193.186836242676
#: The authors' code rejects policy matrices whose column sums fall below this (−5 %/yr).
GROWTH_BUDGET = -0.051


@struct.dataclass
class MitigationState(EnvState):
    """Per episode: emissions and cumulative deviations (N, 5), prevention stocks (N,), the
    last engine temperature, and the engine's own state (the surrogate's 65-year window)."""

    emissions: jax.Array
    deviation: jax.Array
    prevention: jax.Array
    temperature: jax.Array
    engine_state: Any


def _preset_field(name: str) -> Any:
    return struct.field(default_factory=lambda: scenario_preset("i")[name])


@struct.dataclass
class MitigationParams(EnvParams):
    """Everything a sweep may vary (docs/climate_mitigation.md §3.3, §3.6–§3.8). Per-country arrays have length N.

    ``lever_cost`` is (N, 3): energy, methane, agriculture. ``policy_matrix`` is (3, 5):
    levers × (CO2_FF, CO2_AFOLU, CH4, N2O, SO2).
    """

    shares: Any = _preset_field("shares")
    damage_cost: Any = _preset_field("damage_cost")
    lever_cost: Any = _preset_field("lever_cost")
    adaptation_cost: Any = _preset_field("adaptation_cost")
    policy_matrix: Any = _preset_field("policy_matrix")
    max_prevention: Any = 0.0
    initial_obs_temperature: Any = 0.725111  # CICERO-SCM ΔT(2015); envs set their engine's value
    prevention_decay: Any = 0.95
    damage_coefficient: Any = 0.003  # ψ
    reward_scale: Any = 0.1  # η
    effort_levels: Any = struct.field(default_factory=lambda: np.array([0.0, 0.5, 1.0]))
    adaptation_levels: Any = struct.field(default_factory=lambda: np.array([0.0, 0.03, 0.08]))
    decaying_lookahead_prevention: Any = False
    emission_scale: Any = EMISSION_SCALE
    deviation_scale: Any = DEVIATION_SCALE
    max_steps: int = HORIZON  # the real horizon: episodes terminate after 35 decisions
    #: the climate engine's parameters to use instead of its nominal ones (``cicero-jax``:
    #: ``{"lambda": …}`` and the other ocean parameters), ``None`` for the engine's own
    engine_params: Any = None

    def validate(self) -> None:
        super().validate()
        name = type(self).__name__
        check = functools.partial(struct.check_range, name)
        shares = struct.concrete_value(self.shares)
        if shares is None:
            return
        shares = np.asarray(shares)
        if shares.ndim != 1 or shares.size < 1:
            raise ValueError(f"{name}.shares must be a 1-D array with one share per country, got shape {shares.shape}")
        n = shares.size
        check("shares", self.shares, low=0.0, high=1.0)
        if abs(float(shares.sum()) - 1.0) > 1e-6:
            raise ValueError(f"{name}.shares must sum to 1 (one share of global emissions per country), got {shares.sum():.6g}")
        check("damage_cost", self.damage_cost, low=0.0, shape=(n,))
        check("lever_cost", self.lever_cost, low=0.0, shape=(n, NUM_LEVERS))
        check("adaptation_cost", self.adaptation_cost, low=0.0, shape=(n,))
        check("policy_matrix", self.policy_matrix, low=-1.0, high=1.0, shape=(NUM_LEVERS, NUM_GASES))
        matrix = struct.concrete_value(self.policy_matrix)
        if matrix is not None and np.any(np.sum(matrix, axis=0) < GROWTH_BUDGET):
            raise ValueError(
                f"{name}.policy_matrix: every column (gas) must sum to >= {GROWTH_BUDGET} (the −5 %/yr growth budget), "
                f"got column sums {np.round(np.sum(matrix, axis=0), 6).tolist()}"
            )
        check("max_prevention", self.max_prevention, low=0.0, high=1.0)
        check("prevention_decay", self.prevention_decay, low=0.0, high=1.0)
        check("damage_coefficient", self.damage_coefficient, low=0.0)
        check("reward_scale", self.reward_scale, low=0.0)
        check("effort_levels", self.effort_levels, low=0.0, high=1.0, shape=(3,))
        check("adaptation_levels", self.adaptation_levels, low=0.0, high=1.0, shape=(3,))
        check("initial_obs_temperature", self.initial_obs_temperature, low=-10.0, high=10.0)
        check("emission_scale", self.emission_scale, low=0.0, low_inclusive=False)
        check("deviation_scale", self.deviation_scale, low=0.0, low_inclusive=False)
        if self.engine_params is not None:
            if not isinstance(self.engine_params, dict):
                raise ValueError(f"{name}.engine_params must be a dict of engine parameter -> value or None, got {type(self.engine_params).__name__}")
            for key, value in self.engine_params.items():  # CICERO-SCM's ocean: every one a positive rate or coefficient
                check(f"engine_params[{key!r}]", value, low=0.0, low_inclusive=False, shape=())
            values = {k: struct.concrete_value(v) for k, v in self.engine_params.items()}
            if all(v is not None and np.ndim(v) == 0 for v in values.values()):  # one set (not a batch): its stability bound
                from jaxclimate.climate.cicero_jax import OCEAN_PARAMETERS, check_ocean_parameters

                unknown = sorted(set(values) - set(OCEAN_PARAMETERS))
                if unknown:
                    raise ValueError(f"{name}.engine_params: {unknown} are not engine parameters; CICERO-SCM in JAX takes {OCEAN_PARAMETERS}")
                check_ocean_parameters({k: float(v) for k, v in values.items()}, f"{name}.engine_params")

    @property
    def num_agents(self) -> int:
        return int(np.shape(self.shares)[0])
