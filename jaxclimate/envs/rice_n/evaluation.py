"""RICE-N evaluation: climate and economic indices, extremal policies, Pareto front, hypervolume
(paper §6 and Appendix G; docs/rice_n.md §11).

* ΔT = T_AT(2115) − T_AT(2015); ΣY = the sum of net output ("gross_output") over regions and
  activity steps. With ``rounded=True`` (the reference's evaluation script) ΔT is rounded to 2
  decimals, ΣY to an integer, and the index to 2 decimals.
* The indices are normalised by two extremal policies run without negotiation with every other
  action 0: mitigation level 10 (μ = 1.0, outside the action space) with no savings — the best
  climate and worst economy, index point (1, 0) — and savings level 10 (s = 1.0) with no
  mitigation — the worst climate and best economy, (0, 1):

      climate_index  = (ΔT − ΔT_worst) / (ΔT_best − ΔT_worst)       (1 = best)
      economic_index = (ΣY − ΣY_worst) / (ΣY_best − ΣY_worst)       (1 = best)

  The constants ship as the reference's own file (``index_constants()``) and
  :func:`extremal_constants` recomputes them with this environment (tested to 1e-6).
* Hypervolume: the competition's scoring code was never published. We follow the best
  reading of the paper (docs/rice_n.md §11.4) — stated as an assumption: the area dominated by the
  non-dominated (climate, economic) points with reference point (0, 0), i.e. the extremal
  policies' corner, indices clipped at 0.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.envs.rice_n.env import RiceN, replay
from jaxclimate.envs.rice_n.params import RiceParams, index_constants


def climate_index(delta_t: Any, rounded: bool = True) -> np.ndarray:
    """(ΔT − min_ci)/(max_ci − min_ci); the reference's ``min_ci`` is the *worst* ΔT."""
    return _index(delta_t, "ci", 2, rounded)


def economic_index(total_output: Any, rounded: bool = True) -> np.ndarray:
    """(ΣY − min_ei)/(max_ei − min_ei)."""
    return _index(total_output, "ei", 0, rounded)


def _index(value: Any, name: str, decimals: int, rounded: bool) -> np.ndarray:
    """(value − min)/(max − min) with the constants ``min_<name>``, ``max_<name>``; ``rounded``:
    the value to ``decimals`` and the index to 2 decimals first, as the reference's script."""
    c = index_constants()
    value = np.asarray(value, np.float64)
    if rounded:
        value = np.round(value, decimals)
    index = (value - c[f"min_{name}"]) / (c[f"max_{name}"] - c[f"min_{name}"])
    return np.round(index, 2) if rounded else index


def activity_rows(history: Mapping[str, np.ndarray]) -> np.ndarray:
    """Rows of a :func:`replay` history just after each activity (5-year) step: with
    negotiation, every third env step."""
    return 1 + np.nonzero(np.diff(np.asarray(history["state__activity_timestep"])[:, 0]) > 0)[0]


def delta_t_path(history: Mapping[str, np.ndarray]) -> np.ndarray:
    """T_AT − T_AT(2015) of one episode at 2015 and after each activity step (2020, 2025, …),
    read as :func:`episode_metrics` reads ΔT 2015→2100 (entry 17 is its ``delta_t_2100``)."""
    t_at = np.asarray(history["state__global_temperature"], np.float64)[:, 0]
    return t_at[np.concatenate([[0], activity_rows(history)])] - t_at[0]


def episode_metrics(history: Mapping[str, np.ndarray], rounded: bool = False) -> dict[str, float]:
    """Metrics of one episode from a :func:`replay` history (keys ``state__*``, rows 0..E):
    ΔT 2015→2115 and 2015→2100, T_AT and M_AT in 2115, ΣY, Σ reward, climate and economic
    index (unrounded unless ``rounded``)."""
    t_at = np.asarray(history["state__global_temperature"], np.float64)[:, 0]
    rows = activity_rows(history)
    output = np.asarray(history["state__gross_output_all_regions"], np.float64)[rows]
    delta_t = t_at[-1] - t_at[0]
    total_output = float(output.sum())
    row_2100 = rows[16] if rows.size > 16 else rows[-1]  # after activity step 17
    return {
        "delta_t": float(delta_t),
        "delta_t_2100": float(t_at[row_2100] - t_at[0]),
        "temperature_2115": float(t_at[-1]),
        "temperature_2100": float(t_at[row_2100]),
        "carbon_2115": float(np.asarray(history["state__global_carbon_mass"])[-1, 0]),
        "total_output": total_output,
        "total_reward": float(np.asarray(history["rewards"], np.float64).sum()),
        "climate_index": float(climate_index(delta_t, rounded)),
        "economic_index": float(economic_index(total_output, rounded)),
    }


def constant_policy(env: RiceN, savings: int, mitigation: int, params: RiceParams | None = None) -> dict[str, float]:
    """Metrics of the policy that plays the same savings/mitigation levels (10 = rate 1.0)
    every step with all other entries 0 (docs/rice_n.md §11.3)."""
    actions = np.broadcast_to(
        np.asarray(env.constant_actions(savings=savings, mitigation=mitigation)), (env.episode_length, env.num_regions, env.nvec.size)
    )
    return episode_metrics(replay(env, actions, params))


def extremal_constants(env: RiceN | None = None) -> dict[str, float]:
    """Recompute the four normalisation constants with the extremal policies (docs/rice_n.md §11.2)."""
    env = RiceN() if env is None else env
    best = constant_policy(env, savings=0, mitigation=10)
    worst = constant_policy(env, savings=10, mitigation=0)
    return {"min_ci": worst["delta_t"], "max_ci": best["delta_t"], "min_ei": best["total_output"], "max_ei": worst["total_output"]}


def pareto_front(points: Any) -> np.ndarray:
    """The non-dominated rows of ``points`` (k, 2), both coordinates to maximise. A point
    dominates another if it is at least as good in both and strictly better in one."""
    points = np.asarray(points, np.float64).reshape(-1, 2)
    keep = []
    for i, p in enumerate(points):
        dominated = np.any(np.all(points >= p, axis=1) & np.any(points > p, axis=1))
        duplicate = any(np.array_equal(p, points[j]) for j in keep)
        if not dominated and not duplicate:
            keep.append(i)
    front = points[keep]
    return front[np.argsort(-front[:, 0], kind="stable")]


def hypervolume(points: Any, reference: tuple[float, float] = (0.0, 0.0)) -> float:
    """2-D hypervolume: the area dominated by ``points`` (k, 2) above ``reference``
    (docs/rice_n.md §11.4: (0, 0) in index space, indices clipped at the reference). Sorted by the first
    coordinate descending, the area is Σ_i (x_i − r_x)·(y_i − max(r_y, y_{i−1}))."""
    points = np.maximum(np.asarray(points, np.float64).reshape(-1, 2), np.asarray(reference))
    front = pareto_front(points)
    area, y_prev = 0.0, reference[1]
    for x, y in front:
        if y > y_prev:
            area += (x - reference[0]) * (y - y_prev)
            y_prev = y
    return float(area)


def rollout_histories(env: RiceN, params: RiceParams, policy: Callable, keys: jax.Array) -> dict[str, np.ndarray]:
    """Roll out ``policy(key, obs, mask) -> actions (N, A)`` from reset for one episode per
    key (``vmap``ped, one compiled program) and return replay-style histories (numpy) with a
    leading rollout axis, ready for :func:`episode_metrics`."""
    return jax.tree_util.tree_map(np.asarray, _rollout_arrays_jit(env, params, policy, keys))


def rollout_arrays(env: RiceN, params: RiceParams, policy: Callable, keys: jax.Array) -> dict[str, jax.Array]:
    """The traceable body of :func:`rollout_histories` (use inside ``jit``/``vmap``)."""

    def one(key):
        obs, state = env.reset(key, params)

        def body(carry, k):
            obs, state = carry
            actions = policy(k, obs["regions"], env.action_mask("regions", state, params))
            state, _ = env.transition(state, actions, params)
            return (env.observation(state, params), state), (state, state.reward)  # the env's layout

        _, (states, rewards) = jax.lax.scan(body, (obs, state), jax.random.split(key, env.episode_length))
        return history_arrays(state, states, rewards)

    return jax.vmap(one)(keys)


def history_arrays(first: Any, states: Any, rewards: jax.Array) -> dict[str, jax.Array]:
    """An episode in :func:`replay`'s layout (``state__*`` rows 0..E, ``rewards``) from its
    reset state ``first`` and the states after each step, stacked (traceable)."""
    states = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b]), first, states)
    return {
        "state__global_temperature": states.temperature,
        "state__global_carbon_mass": states.carbon_mass,
        "state__gross_output_all_regions": states.gross_output,
        "state__activity_timestep": states.activity_step[:, None],
        "state__mitigation_rate_all_regions": states.mitigation,
        "state__savings_all_regions": states.savings,
        "state__capital_all_regions": states.capital,  # with the above: what the competition's metrics read
        "state__production_all_regions": states.production,
        "state__investment_all_regions": states.investment,
        "state__abatement_cost_all_regions": states.abatement_cost,
        "rewards": rewards,
    }


# One compilation per (env, policy function), not per call.
_rollout_arrays_jit = jax.jit(rollout_arrays, static_argnums=(0, 2))
