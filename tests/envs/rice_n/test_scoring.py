"""The competition's eight metrics (scoring.py): on the original's own recorded episodes, on our
replays, rounding, aggregation over episodes, the table and a team's hypervolume."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxclimate.envs.rice_n import RiceN, replay, scoring
from jaxclimate.envs.rice_n import evaluation as ev
from jaxclimate.envs.rice_n.params import index_constants
from tests.envs.rice_n import golden

LABELS = ["Episode Reward", "Temperature Rise", "Carbon Mass", "Capital", "Production", "Gross Output", "Investment", "Abatement Cost"]
KEYS = ["episode_reward", "temperature_rise", "carbon_mass", "capital", "production", "gross_output", "investment", "abatement_cost"]
INTEGER = ("carbon_mass", "capital", "production", "gross_output", "investment")  # rounded to 0 decimals

# FORMAT.md §1.1's ΔT, ΣY, Σ reward and M_AT(2115) of the recorded episodes, rounded by hand as
# the script rounds them: Temperature Rise, Gross Output, Episode Reward, Carbon Mass
RECORDED = {
    "ricen_random_neg0_seed0": (4.69, 6755, 110.25, 2703),
    "ricen_random_neg1_seed0": (2.12, 6304, 106.36, 1186),
    "ricen_random_safe_neg0_seed0": (4.61, 6800, 133.34, 2640),
    "ricen_random_safe_neg1_seed0": (2.11, 6287, 130.26, 1182),
    "ricen_mitig0_sav100_neg0_seed0": (7.01, 9674, 0.0, 5682),
    "ricen_mitig100_sav0_neg0_seed0": (1.25, 607, 60.62, 852),
    "ricen_zeros_neg0_seed0": (2.17, 665, 65.09, 1096),
}
# the recorded constant policies as (savings, mitigation) levels
CONSTANT = {"ricen_mitig0_sav100_neg0_seed0": (10, 0), "ricen_mitig100_sav0_neg0_seed0": (0, 10), "ricen_zeros_neg0_seed0": (0, 0)}
MITIGATION_LEVELS = (0, 5, 9)  # at savings level 2


@pytest.fixture(scope="module")
def replays():
    """Our float64 replays of constant policies, one compilation: the recorded constant
    policies, and savings 2 with each of MITIGATION_LEVELS."""
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        env = RiceN(dtype="float64")

        shape = (env.episode_length, env.num_regions, env.nvec.size)

        def run(s, mu):
            return replay(env, np.broadcast_to(np.asarray(env.constant_actions(savings=s, mitigation=mu)), shape))

        out = {name: run(*levels) for name, levels in CONSTANT.items()}
        out.update({("s2", mu): run(2, mu) for mu in MITIGATION_LEVELS})
        return out
    finally:
        jax.config.update("jax_enable_x64", previous)


def _hand(h):
    """The eight metrics before rounding, computed row by row (independently of the module):
    the state keys summed over every row, gross output over row 0 and the rows where the
    activity counter went up by one, the reward read from the state's reward column."""
    act = [int(a) for a in np.asarray(h["state__activity_timestep"]).ravel()]
    total = {key: 0.0 for key in ("capital", "production", "investment", "abatement_cost", "gross_output", "episode_reward")}
    for r in range(len(act)):
        for key in ("capital", "production", "investment", "abatement_cost"):
            total[key] += sum(float(v) for v in h[f"state__{key}_all_regions"][r])
        if r == 0 or act[r] == act[r - 1] + 1:
            total["gross_output"] += sum(float(v) for v in h["state__gross_output_all_regions"][r])
        total["episode_reward"] += sum(float(v) for v in h["state__reward_all_regions"][r])
    temperature, carbon = h["state__global_temperature"], h["state__global_carbon_mass"]
    total["temperature_rise"] = float(temperature[len(act) - 1][0]) - float(temperature[0][0])
    total["carbon_mass"] = float(carbon[len(act) - 1][0])
    return total


def _rounded_by_hand(values):
    return {k: int(np.round(v)) if k in INTEGER else float(np.round(v, 2)) for k, v in values.items()}


@pytest.mark.parametrize("name", list(RECORDED))
def test_recorded_episodes_of_the_original(name):
    """The original's own state histories: the summary values of FORMAT.md, rounded by hand,
    and every metric against the row-by-row hand computation."""
    g = golden.load(name)
    out = scoring.competition_metrics(g)
    temperature_rise, gross_output, reward, carbon = RECORDED[name]
    assert out["Temperature Rise"] == temperature_rise and out["Gross Output"] == gross_output
    assert out["Episode Reward"] == reward and out["Carbon Mass"] == carbon
    hand = _hand(g)
    raw = scoring.episode_values(g)
    for key in KEYS:
        assert raw[key] == pytest.approx(hand[key], rel=1e-12, abs=1e-12), key
    assert {k: out[k] for k in KEYS} == _rounded_by_hand(hand)
    assert all(out[label] == out[key] for label, key in zip(LABELS, KEYS))
    assert list(out)[::2] == LABELS and list(out)[1::2] == KEYS


def test_negotiation_rows_counted_as_the_original_counts_them():
    """With negotiation each activity row is copied to the next two rows, so Capital,
    Production, Investment and Abatement Cost count it three times (the last row once); Gross
    Output counts activity rows once; the reward is 0 on negotiation rows."""
    g = golden.load("ricen_random_neg1_seed0")
    raw = scoring.episode_values(g)
    for key in ("capital", "production", "investment", "abatement_cost"):
        x = np.asarray(g[f"state__{key}_all_regions"], np.float64)
        np.testing.assert_array_equal(x[1::3], x[0:-1:3])  # rows 3t+1 and 3t+2 copy row 3t
        np.testing.assert_array_equal(x[2::3], x[0:-1:3])
        assert raw[key] == pytest.approx(3 * x[0:-1:3].sum() + x[-1].sum(), rel=1e-12), key
    y = np.asarray(g["state__gross_output_all_regions"], np.float64)
    assert raw["gross_output"] == pytest.approx(y[3::3].sum(), rel=1e-12)
    assert not np.asarray(g["state__reward_all_regions"])[1::3].any() and not np.asarray(g["state__reward_all_regions"])[2::3].any()
    assert raw["episode_reward"] == pytest.approx(np.asarray(g["rewards"], np.float64)[2::3].sum(), rel=1e-12)


@pytest.mark.parametrize("name", list(CONSTANT))
def test_our_replay_scores_as_the_original(replays, name):
    """Our float64 replay of a recorded constant policy gives the original's eight metrics."""
    ours, original = scoring.competition_metrics(replays[name]), scoring.competition_metrics(golden.load(name))
    assert ours == original
    raw, raw_original = scoring.episode_values(replays[name]), scoring.episode_values(golden.load(name))
    for key in KEYS:
        assert raw[key] == pytest.approx(raw_original[key], rel=1e-5, abs=1e-6), key


def test_constant_policy_by_hand(replays):
    """savings 2, mitigation 5 (docs/rice_n.md §11.3: ΔT 3.7818050, M_AT 2088.746, ΣY 5067.4541,
    Σ reward 164.3101): every metric against the hand computation, and the indices."""
    h = replays[("s2", 5)]
    out = scoring.competition_metrics(h)
    hand = _hand(h)
    assert {k: out[k] for k in KEYS} == _rounded_by_hand(hand)
    assert (out["Temperature Rise"], out["Carbon Mass"], out["Gross Output"], out["Episode Reward"]) == (3.78, 2089, 5067, 164.31)
    # our history's reward column and its returned rewards agree (the module reads the latter)
    assert np.asarray(h["rewards"]).sum() == pytest.approx(hand["episode_reward"], rel=1e-12)
    # the sums by their structure: 20 activity rows after row 0, which holds K_0 and zeros
    k = np.asarray(h["state__capital_all_regions"])
    assert out["Capital"] == int(np.round(k[0].sum() + k[1:].sum()))
    assert np.asarray(h["state__production_all_regions"])[0].sum() == 0.0
    result = scoring.score([h])
    c = index_constants()
    assert result["climate_index"] == round((3.78 - c["min_ci"]) / (c["max_ci"] - c["min_ci"]), 2) == 0.56
    assert result["economic_index"] == round((5067 - c["min_ei"]) / (c["max_ei"] - c["min_ei"]), 2) == 0.49
    rounded = ev.episode_metrics(h, rounded=True)  # one episode: the existing evaluation's indices
    assert (result["climate_index"], result["economic_index"]) == (rounded["climate_index"], rounded["economic_index"])


def test_more_mitigation_lowers_temperature_and_carbon(replays):
    out = [scoring.competition_metrics(replays[("s2", mu)]) for mu in MITIGATION_LEVELS]
    for low, high in zip(out, out[1:]):
        assert high["Temperature Rise"] < low["Temperature Rise"]
        assert high["Carbon Mass"] < low["Carbon Mass"]
        assert high["Abatement Cost"] > low["Abatement Cost"]
        assert high["Gross Output"] < low["Gross Output"]


def _synthetic(temperature_rise=0.5, carbon=800.0, gross=None, activity=None, capital=1.0, abatement=0.0, reward=0.0):
    """A two-region history of 4 rows with chosen values (not an env episode)."""
    rows = 4
    activity = np.arange(rows) if activity is None else np.asarray(activity)
    gross = np.zeros((rows, 2)) if gross is None else np.asarray(gross, np.float64)
    temperature = np.zeros((rows, 2))
    temperature[-1, 0] = temperature_rise
    carbon_mass = np.zeros((rows, 3))
    carbon_mass[-1, 0] = carbon
    per_region = np.zeros((rows, 2))
    per_region[1, 0] = 1.0
    state = lambda v: per_region * v  # noqa: E731
    return {
        "state__global_temperature": temperature,
        "state__global_carbon_mass": carbon_mass,
        "state__capital_all_regions": state(capital),
        "state__production_all_regions": state(2.0),
        "state__gross_output_all_regions": gross,
        "state__investment_all_regions": state(0.5),
        "state__abatement_cost_all_regions": state(abatement),
        "state__activity_timestep": activity[:, None].astype(np.int32),
        "rewards": state(reward)[1:],  # (E, N): no reward for row 0
    }


def test_rounding_as_the_original():
    """numpy's round half to even, ``int`` for 0 decimals, NaN kept."""
    out = scoring.competition_metrics(_synthetic(temperature_rise=0.125, carbon=2.5, capital=3.5, abatement=0.375, reward=0.625))
    assert out["Temperature Rise"] == 0.12 and out["Abatement Cost"] == 0.38 and out["Episode Reward"] == 0.62
    assert out["Carbon Mass"] == 2 and out["Capital"] == 4 and out["Investment"] == 0  # 0.5 -> 0
    assert all(type(out[k]) is (int if k in INTEGER else float) for k in KEYS)
    assert np.isnan(scoring.competition_metrics(_synthetic(carbon=np.nan))["Carbon Mass"])


def test_gross_output_rows_as_the_original_selects_them():
    """Row 0 always counts; afterwards only rows where the activity counter rose by exactly one."""
    gross = [[1.0, 2.0], [10.0, 20.0], [100.0, 200.0], [1000.0, 2000.0]]
    assert scoring.competition_metrics(_synthetic(gross=gross))["Gross Output"] == 3333
    assert scoring.competition_metrics(_synthetic(gross=gross, activity=[0, 0, 1, 1]))["Gross Output"] == 303
    assert scoring.competition_metrics(_synthetic(gross=gross, activity=[0, 2, 3, 3]))["Gross Output"] == 303


def test_score_means_over_episodes_then_rounds():
    """Each metric is the mean over episodes, then rounded; the indices come from the rounded
    means (1.004 and 1.014 give 1.01, not the mean 1.005 of the rounded 1.00 and 1.01)."""
    a, b = _synthetic(temperature_rise=1.004, carbon=800.4), _synthetic(temperature_rise=1.014, carbon=801.4)
    assert scoring.competition_metrics(a)["Temperature Rise"] == 1.0 and scoring.competition_metrics(b)["Temperature Rise"] == 1.01
    result = scoring.score([a, b])
    assert result["Temperature Rise"] == 1.01 and result["Carbon Mass"] == 801 and result["episodes"] == 2
    assert result["climate_index"] == float(ev.climate_index(1.01)) and result["economic_index"] == float(ev.economic_index(0))
    batched = {key: np.stack([a[key], b[key]]) for key in a}  # a leading roll-out axis
    assert scoring.score(batched) == result
    assert scoring.score(a) == scoring.score([a])
    with pytest.raises(ValueError):
        scoring.score([])


def test_required_keys_suffice_and_are_required():
    g = golden.load("ricen_random_neg1_seed0")
    assert scoring.competition_metrics({key: g[key] for key in scoring.REQUIRED_KEYS}) == scoring.competition_metrics(g)
    with pytest.raises(KeyError, match="state__capital_all_regions"):
        scoring.competition_metrics({key: g[key] for key in scoring.REQUIRED_KEYS if key != "state__capital_all_regions"})


def test_format_table():
    table = scoring.format_table(scoring.score([golden.load("ricen_zeros_neg0_seed0")]))
    lines = table.splitlines()
    assert len(lines) == 2 + 8 + 3
    expected = {"Temperature Rise": "2.17", "Gross Output": "665", "Episode Reward": "65.09", "climate_index": "0.84", "episodes": "1"}
    for label, value in expected.items():
        assert any(line.startswith(label) and line.endswith(" " + value) for line in lines), label
    assert len({len(line) for line in lines}) == 1  # aligned columns


def test_team_hypervolume_uses_the_ten_most_recent():
    best_but_old = [0.9, 0.9]
    recent = [[0.5, 0.4]] * 9 + [[0.3, 0.6]]
    points = [best_but_old, [0.1, 0.1]] + recent  # oldest first: 12 submissions
    assert scoring.team_hypervolume(points) == pytest.approx(0.5 * 0.4 + 0.3 * (0.6 - 0.4))
    assert scoring.team_hypervolume(points) == ev.hypervolume(points[-10:])
    assert scoring.team_hypervolume(points, most_recent=12) == pytest.approx(0.81)
    assert scoring.team_hypervolume(points[:1]) == pytest.approx(0.81)
