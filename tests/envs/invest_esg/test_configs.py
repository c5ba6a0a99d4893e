"""Every named market equals the original experiment file it cites (tests/data/invest_esg/configs)."""

import numpy as np
import pytest
import yaml

import jaxclimate
from jaxclimate.envs.invest_esg import ALIASES, CONFIGS, InvestESG, market_config
from tests.envs.invest_esg.golden import DATA

CONFIG_DIR = DATA / "configs"
FLAGS = (
    "company_esg_score_observable",
    "avg_esg_score_observable",
    "esg_spending_observable",
    "resilience_spending_observable",
    "climate_observable",
)


def source_file(name: str):
    source = CONFIGS[name].source
    if source == "config/exp_default.yaml":
        return CONFIG_DIR / "top_level_exp_default.yaml"
    return CONFIG_DIR / source.split("/")[-1].replace("*", "x")


@pytest.mark.parametrize("name", [n for n in CONFIGS if CONFIGS[n].source])
def test_named_market_matches_its_file(name):
    raw = yaml.safe_load(source_file(name).read_text())
    params = market_config(name).params()
    companies, investors = raw["company_attributes"], raw["investor_attributes"]
    np.testing.assert_array_equal(params.company_capital, [c["capital"] for c in companies])
    np.testing.assert_array_equal(params.loss_fraction, [c["climate_risk_exposure"] for c in companies])
    np.testing.assert_array_equal(params.company_noise, [c["beta"] for c in companies])
    np.testing.assert_array_equal(params.greenwash_coef, [c.get("greenwash_esg_coef", 2) for c in companies])
    np.testing.assert_array_equal(params.investor_capital, [i["capital"] for i in investors])
    np.testing.assert_array_equal(params.esg_preference, [i["esg_preference"] for i in investors])
    assert params.market_growth == raw["market_performance_baseline"]
    assert params.market_noise == raw["market_performance_variance"]
    assert params.max_steps == raw["max_steps"]
    assert params.allow_greenwash == raw["allow_greenwash_investment"]
    assert params.allow_resilience == raw["allow_resilience_investment"]
    ours = ("esg_score_observable", "avg_esg_score_observable", "esg_spending_observable", "resilience_spending_observable", "climate_observable")
    for flag, field in zip(FLAGS, ours):
        assert getattr(params, field) == raw.get(flag, False), flag
    assert raw["action_capping"] == 0.05 == InvestESG(config=name).action_cap
    config = CONFIGS[name]
    assert config.company_learning_starts == raw.get("company_initial_memory", 0)
    policies = raw["agent_policies"][: len(companies)]
    hardcoded = [tuple(float(x) for x in p["action"]) for p in policies if p["mode"] == "Hardcoded"]
    assert (config.hardcoded_company_actions or ()) == tuple(hardcoded)


def test_every_original_file_has_a_name_and_aliases_resolve():
    cited = {source_file(n).name for n in CONFIGS if CONFIGS[n].source}
    assert cited == {p.name for p in CONFIG_DIR.glob("*.yaml")}
    for alias, name in ALIASES.items():
        assert market_config(alias) is CONFIGS[name]
    env, params = jaxclimate.make("invest-esg", config="mandate")
    assert bool(params.esg_score_observable) and env.num_companies == 5


def test_paper_default_is_the_default():
    env, params = jaxclimate.make("invest-esg")
    assert env.config is CONFIGS["exp_default"] and env.agents == {"companies": 5, "investors": 3}
    assert float(np.sum(params.company_capital) + np.sum(params.investor_capital)) == pytest.approx(100.1)
    assert env.obs_dim == 56 and params.max_steps == 100
