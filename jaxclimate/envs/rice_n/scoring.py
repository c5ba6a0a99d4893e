"""The AI for Global Climate Cooperation competition's scoring of RICE-N roll-outs (docs/rice_n.md §18).

Reproduced from github.com/mila-iqia/climate-cooperation-competition, scripts/evaluate_submission.py
at 1b0950e5c3e6ef782d3f5c9b57637a74368c7a95 (3 April 2023, the file's last change on ``main``, so
also the file at 148ed85, the commit docs/rice_n.md ports; submissions closed on 31 March 2023 and
were reviewed on 1–15 April, and the metric code is the same from 7324e6e of 30 March, which
merged the gross-output fix). Written from a reading of that script, of ``rice.py`` (which rows
of its global state hold what) and of ``fetch_episode_states`` in ``scripts/train_with_rllib.py``
at the same commit; line numbers below are the script's.

The script rolls out one episode (``perform_evaluation`` and ``__main__``, L362–366 and
L571–573, leave ``num_episodes`` at 1) and reads the env's global state: arrays with one row per
env step, row 0 the reset state, so E + 1 rows, E = 20, or 60 with negotiation. Our
:func:`~jaxclimate.envs.rice_n.env.replay` histories have the same rows (``state__<key>``).
In the original, a negotiation step copies every state row forward except ``reward_all_regions``
(``rice.py`` ``step``), which stays 0 there, as it is at row 0; production, gross output,
investment and abatement cost are 0 at row 0, capital is K_0. Per episode (``compute_metrics``,
L149–253; labels and decimals L50–60):

==================  =====================================================================  ========
printed name        per-episode value                                                      rounded
==================  =====================================================================  ========
Episode Reward      Σ over all rows and regions of ``reward_all_regions`` (the utilities    2
                    U_i of the activity steps, undiscounted; here Σ ``rewards``) (L210–214)
Temperature Rise    T_AT(last row) − T_AT(row 0): ``global_temperature[-1, 0] − [0, 0]``    2
                    (L182–188)
Carbon Mass         M_AT(last row): ``global_carbon_mass[-1, 0]`` (L190–194)                0 (int)
Capital             Σ over all rows and regions of ``capital_all_regions`` (L210–214)       0 (int)
Production          Σ over all rows and regions of ``production_all_regions``               0 (int)
Gross Output        Σ over regions of ``gross_output_all_regions`` (net output Y) on row 0  0 (int)
                    and the rows where ``activity_timestep`` rose by exactly 1 (L196–208)
Investment          Σ over all rows and regions of ``investment_all_regions``               0 (int)
Abatement Cost      Σ over all rows and regions of ``abatement_cost_all_regions``           2
==================  =====================================================================  ========

So with negotiation Capital, Production, Investment and Abatement Cost count each activity
step but the last three times (its row and the two negotiation rows that copy it; Capital also
counts K_0 three times), while Gross Output counts each once (the March 2023 fix) and so does
Episode Reward (negotiation rows are 0). Several episodes: each metric is the mean over
episodes of the per-episode values (L216–217), then rounded with ``np.round(value, decimals)``
(round half to even), made an ``int`` for 0 decimals, and NaN left as it is (``perform_format``, L349–359). The climate and economic indices (L225–244) are
computed from the **rounded** means of Temperature Rise and Gross Output and rounded to 2
decimals: :func:`~jaxclimate.envs.rice_n.evaluation.climate_index` and
:func:`~jaxclimate.envs.rice_n.evaluation.economic_index` with ``rounded=True``, used here.

The original casts the env's float32 state into float64 arrays (``fetch_episode_states``) and
sums those; we sum in float64 as well.

Hypervolume: no scoring code for it exists in the repository (any branch or commit). The
competition's web page (``tracks.html`` on its ``gh-pages`` branch, April 2023) says each team is
scored by "the hypervolume enclosed by your 10 most recent solutions"; :func:`team_hypervolume`
takes those and otherwise is :func:`~jaxclimate.envs.rice_n.evaluation.hypervolume`, whose
reference point (0, 0) remains an assumption (docs/rice_n.md §11.4).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from jaxclimate.envs.rice_n import evaluation

#: (printed name, our key, decimals) in the original's order; decimals 0 gives an ``int``.
METRICS: tuple[tuple[str, str, int], ...] = (
    ("Episode Reward", "episode_reward", 2),
    ("Temperature Rise", "temperature_rise", 2),
    ("Carbon Mass", "carbon_mass", 0),
    ("Capital", "capital", 0),
    ("Production", "production", 0),
    ("Gross Output", "gross_output", 0),
    ("Investment", "investment", 0),
    ("Abatement Cost", "abatement_cost", 2),
)

#: The history keys the metrics read (rows 0..E; ``rewards`` E rows), as :func:`replay` names them.
REQUIRED_KEYS: tuple[str, ...] = (
    "state__global_temperature",
    "state__global_carbon_mass",
    "state__capital_all_regions",
    "state__production_all_regions",
    "state__gross_output_all_regions",
    "state__investment_all_regions",
    "state__abatement_cost_all_regions",
    "state__activity_timestep",
    "rewards",
)

# the metrics summed over every row and region: our key -> history key
_SUMMED = {
    "capital": "state__capital_all_regions",
    "production": "state__production_all_regions",
    "investment": "state__investment_all_regions",
    "abatement_cost": "state__abatement_cost_all_regions",
}


def episode_values(history: Mapping[str, Any]) -> dict[str, float]:
    """The eight metrics of one episode before rounding (float64), keyed by our names."""
    missing = [key for key in REQUIRED_KEYS if key not in history]
    if missing:
        raise KeyError(f"competition metrics: the history lacks {missing} (see scoring.REQUIRED_KEYS)")
    get = {key: np.asarray(history[key], np.float64) for key in REQUIRED_KEYS}
    temperature, carbon = get["state__global_temperature"], get["state__global_carbon_mass"]
    # row 0 and every row whose activity counter is one more than the row before it
    step = get["state__activity_timestep"].reshape(-1)
    counted = np.concatenate([[True], np.diff(step) == 1])
    values = {
        "episode_reward": float(get["rewards"].sum()),
        "temperature_rise": float(temperature[-1, 0] - temperature[0, 0]),
        "carbon_mass": float(carbon[-1, 0]),
        "gross_output": float(get["state__gross_output_all_regions"][counted].sum()),
    }
    values.update({name: float(get[key].sum()) for name, key in _SUMMED.items()})
    return {name: values[name] for _, name, _ in METRICS}


def _round(value: float, decimals: int) -> float | int:
    """The original's ``perform_format``: numpy's rounding (half to even), ``int`` for 0
    decimals, NaN unchanged."""
    if np.isnan(value):
        return float(value)
    rounded = np.round(np.float64(value), decimals)
    return int(rounded) if decimals == 0 else float(rounded)


def _formatted(values: Mapping[str, float]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, name, decimals in METRICS:
        out[label] = out[name] = _round(values[name], decimals)
    return out


def competition_metrics(history: Mapping[str, Any]) -> dict[str, Any]:
    """The eight metrics of one episode as the competition's script reports them (rounded),
    each under its printed name (``"Temperature Rise"``) and our key (``"temperature_rise"``)."""
    return _formatted(episode_values(history))


def _episodes(histories: Any) -> list[Mapping[str, Any]]:
    """A list of histories, or one history dict with a leading roll-out axis, -> a list."""
    if isinstance(histories, Mapping):
        if np.ndim(histories["state__global_temperature"]) == 2:
            return [histories]
        count = np.shape(histories["state__global_temperature"])[0]
        return [{key: np.asarray(value)[i] for key, value in histories.items()} for i in range(count)]
    return list(histories)


def score(histories: Any) -> dict[str, Any]:
    """The competition's evaluation of several episodes (one, as the script ran it, is the
    default case): each metric the mean over episodes, then rounded; the climate and economic
    indices from the rounded means (docs/rice_n.md §11.2), and ``episodes``.

    ``histories``: a sequence of :func:`replay`-style histories, or one history (dict), with or
    without a leading roll-out axis (as :func:`evaluation.rollout_histories` returns them)."""
    episodes = _episodes(histories)
    if not episodes:
        raise ValueError("score: no episodes")
    per_episode = [episode_values(h) for h in episodes]
    means = {name: float(np.mean([v[name] for v in per_episode])) for _, name, _ in METRICS}
    out = _formatted(means)
    out["climate_index"] = float(evaluation.climate_index(out["temperature_rise"], rounded=True))
    out["economic_index"] = float(evaluation.economic_index(out["gross_output"], rounded=True))
    out["episodes"] = len(episodes)
    return out


def format_table(result: Mapping[str, Any]) -> str:
    """A plain-text table of :func:`score` (or :func:`competition_metrics`) output."""
    rows = [(label, result[label]) for label, _, _ in METRICS]
    rows += [(key, result[key]) for key in ("climate_index", "economic_index", "episodes") if key in result]
    width = max(len(label) for label, _ in rows)
    cells = [f"{value:.2f}" if isinstance(value, float) else str(value) for _, value in rows]
    value_width = max(len(c) for c in cells)
    lines = [f"{'metric':<{width}}  {'value':>{value_width}}", f"{'-' * width}  {'-' * value_width}"]
    lines += [f"{label:<{width}}  {cell:>{value_width}}" for (label, _), cell in zip(rows, cells)]
    return "\n".join(lines)


def team_hypervolume(points: Sequence[Sequence[float]] | np.ndarray, most_recent: int = 10) -> float:
    """A team's competition score as the competition's page states it: the hypervolume of its
    ``most_recent`` (10) latest submissions' (climate_index, economic_index) points, ``points``
    ordered oldest first. The area is :func:`evaluation.hypervolume` (reference point (0, 0),
    an assumption: the scoring code was never published)."""
    points = np.asarray(points, np.float64).reshape(-1, 2)
    if most_recent < 1:
        raise ValueError(f"team_hypervolume: most_recent must be >= 1, got {most_recent}")
    return evaluation.hypervolume(points[-most_recent:])
