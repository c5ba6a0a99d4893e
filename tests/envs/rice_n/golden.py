"""Helpers for the RICE-N recorded episodes in ``tests/data/rice_n`` (see FORMAT.md there)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.envs.rice_n import RiceN, state_from_record, state_to_record

DATA = Path(__file__).resolve().parents[2] / "data" / "rice_n"
FILES = (
    "ricen_random_neg0_seed0",
    "ricen_random_neg1_seed0",
    "ricen_random_safe_neg0_seed0",
    "ricen_random_safe_neg1_seed0",
    "ricen_mitig0_sav100_neg0_seed0",
    "ricen_mitig100_sav0_neg0_seed0",
    "ricen_zeros_neg0_seed0",
)
CONSTANT = ("ricen_mitig0_sav100_neg0_seed0", "ricen_mitig100_sav0_neg0_seed0", "ricen_zeros_neg0_seed0")
SAFE = ("ricen_random_safe_neg0_seed0", "ricen_random_safe_neg1_seed0")
#: FORMAT.md §5.2 first row: robust on every file, even the ill-conditioned random ones.
CLIMATE_CAPITAL = (
    "global_temperature",
    "global_carbon_mass",
    "capital_all_regions",
    "labor_all_regions",
    "production_factor_all_regions",
    "intensity_all_regions",
    "production_all_regions",
    "gross_output_all_regions",
    "investment_all_regions",
    "damages_all_regions",
    "abatement_cost_all_regions",
    "mitigation_cost_all_regions",
    "global_exogenous_emissions",
    "global_land_emissions",
    "savings_all_regions",
    "mitigation_rate_all_regions",
    "max_export_limit_all_regions",
    "future_tariffs",
)


@functools.lru_cache(maxsize=None)
def load(name: str) -> dict:
    with np.load(DATA / f"{name}.npz") as f:
        data = {k: f[k] for k in f.files}
    data["meta"] = json.loads(str(data.pop("meta_json")))
    return data


def env_for(name: str, dtype: str = "float64") -> RiceN:
    protocol = "bilateral" if load(name)["meta"]["negotiation_on"] else "none"
    return _env(protocol, dtype)


@functools.lru_cache(maxsize=None)
def _env(protocol: str, dtype: str) -> RiceN:
    return RiceN(protocol=protocol, dtype=dtype)


def rel_error(port: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """FORMAT.md §5: |port − ref| / max(|ref|, 1e-3·max|ref[row]| + 1e-12), per leading row."""
    port = np.asarray(port, np.float64).reshape(len(ref), -1)
    ref = np.asarray(ref, np.float64).reshape(len(ref), -1)
    floor = 1e-3 * np.abs(ref).max(axis=1, keepdims=True) + 1e-12
    return np.abs(port - ref) / np.maximum(np.abs(ref), floor)


def one_step_records(env: RiceN, g: dict, rows: np.ndarray) -> dict:
    """Teacher forcing (FORMAT.md §5.3): for each k in ``rows`` set the state from recorded
    row k−1, apply ``actions[k−1]`` and return the next states keyed like the record, plus
    ``obs``, ``action_mask`` and ``rewards``."""
    states = [state_from_record(g, k - 1, dtype=env.dtype) for k in rows]
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *states)
    actions = jnp.asarray(g["actions"][rows - 1], jnp.int32)
    return jax.tree_util.tree_map(np.asarray, _one_step(env, stacked, actions))


@functools.partial(jax.jit, static_argnums=0)
def _one_step(env, states, actions):
    def step(state, levels):
        state, _ = env.transition(state, levels, env.default_params)
        out = state_to_record(state)
        out["obs"] = env.observe(state)
        out["action_mask"] = env.flat_action_mask(state)
        out["rewards"] = state.reward
        return out

    return jax.vmap(step)(states, actions)


def saturation(g: dict, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(saturated (rows, N) bool, residue bound (rows, N)) at recorded rows k (FORMAT.md §5.3)."""
    y = g["state__gross_output_all_regions"][k].astype(np.float64)
    inv = g["state__investment_all_regions"][k].astype(np.float64)
    x = g["state__scaled_imports"][k].astype(np.float64)
    xh = g["state__tariffed_imports"][k].astype(np.float64)
    residue = y - inv - x.sum(axis=-2)
    eps = 1e-6
    s = (0.5 / 26) * np.sqrt(np.maximum(xh, 0.0)).sum(axis=-1)
    return residue <= 1e-4 * y, 0.25 * eps * y + s * np.sqrt(eps * y)
