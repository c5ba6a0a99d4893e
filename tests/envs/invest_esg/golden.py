"""Helpers for the InvestESG golden episodes in ``tests/data/invest_esg`` (README there)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.envs.invest_esg import COMPANIES, INVESTORS, InvestESG

DATA = Path(__file__).resolve().parents[2] / "data" / "invest_esg"
FILES = ("default_5x3_mitigation", "gw_res_5x3")


@functools.lru_cache(maxsize=None)
def load(name: str) -> dict:
    with np.load(DATA / f"{name}.npz") as f:
        data = {k: f[k] for k in f.files}
    data["meta"] = json.loads(str(data.pop("meta_json")))
    return data


def market(meta: dict) -> dict:
    """The recorded constructor settings as a ``MarketConfig`` mapping."""
    cfg = meta["config"]
    companies, investors = cfg["company_attributes"], cfg["investor_attributes"]
    return dict(
        company_capital=tuple(float(c["capital"]) for c in companies),
        loss_fraction=tuple(float(c["climate_risk_exposure"]) for c in companies),
        company_noise=tuple(float(c["beta"]) for c in companies),
        greenwash_coef=tuple(float(c.get("greenwash_esg_coef", 2.0)) for c in companies),
        investor_capital=tuple(float(i["capital"]) for i in investors),
        esg_preference=tuple(float(i["esg_preference"]) for i in investors),
        market_growth=float(cfg["market_performance_baseline"]),
        market_noise=float(cfg["market_performance_variance"]),
        allow_greenwash=bool(cfg["allow_greenwash_investment"]),
        allow_resilience=bool(cfg["allow_resilience_investment"]),
        esg_score_observable=bool(cfg.get("company_esg_score_observable", False)),
        avg_esg_score_observable=bool(cfg.get("avg_esg_score_observable", False)),
        esg_spending_observable=bool(cfg.get("esg_spending_observable", False)),
        resilience_spending_observable=bool(cfg.get("resilience_spending_observable", False)),
        climate_observable=bool(cfg.get("climate_observable", False)),
        max_steps=int(cfg["max_steps"]),
    )


def env_for(name: str, dtype: str = "float64", event_mode: str = "injected") -> tuple[InvestESG, object]:
    """The env and parameters that recorded ``name``; ``injected`` feeds its stored uniforms."""
    data = load(name)
    env = InvestESG(config=market(data["meta"]), event_mode=event_mode, dtype=dtype, action_cap=data["meta"]["action_capping"])
    params = env.default_params
    if event_mode == "injected":
        params = params.replace(event_uniforms=data["event_uniforms"])
    return env, params


def actions(name: str, dtype=jnp.float64) -> dict:
    data = load(name)
    return {
        COMPANIES: jnp.asarray(data["company_action"].astype(np.float64), dtype),
        INVESTORS: jnp.asarray(data["investor_action"].astype(np.int32)),
    }


@functools.partial(jax.jit, static_argnums=0)
def replay(env: InvestESG, params, acts: dict):
    """Reset and play the recorded actions; returns the reset obs and per-step records keyed
    like the golden arrays."""
    obs0, state0 = env.reset(jax.random.PRNGKey(0), params)

    def body(state, inputs):
        t, a = inputs
        obs, new, rewards, terminated, truncated, info = env.step(jax.random.PRNGKey(t), state, a, params)
        # ``step`` auto-resets after the last year: take the state before the reset from ``transition``.
        after, _, _ = env.transition(jax.random.PRNGKey(t), state, a[COMPANIES], a[INVESTORS], params)
        return new, record(after, info, rewards, terminated, truncated, info["final_obs"])

    steps = jnp.arange(acts[COMPANIES].shape[0])
    _, records = jax.lax.scan(body, state0, (steps, acts))
    return obs0[COMPANIES][0], records


def record(state, info, rewards, terminated, truncated, obs) -> dict:
    cum = state.cumulative
    return {
        "obs": obs[COMPANIES][0],
        "rewards": jnp.concatenate([rewards[COMPANIES], rewards[INVESTORS]]),
        "terminated": terminated,
        "truncated": truncated,
        "heat_prob": state.hazard_prob[0],
        "precip_prob": state.hazard_prob[1],
        "drought_prob": state.hazard_prob[2],
        "climate_risk": state.climate_risk,
        "total_cumu_mitigation": jnp.sum(cum[:, 0]),
        "events": state.events.astype(jnp.int64 if jax.config.jax_enable_x64 else jnp.int32),
        "climate_event_occurrence": state.event_count,
        "market_performance": state.market_performance,
        "investment_amount": info["investment_amount"],
        "investor_cash_after_invest": state.cash,
        "company_capital_after_divest": info["capital_after_divest"],
        "company_capital_after_invest": info["capital_after_invest"],
        "company_pc": state.fractions,
        "company_amount": info["spent"],
        "company_cumu": cum,
        "company_resilience": state.loss,
        "company_esg_score": state.esg_score,
        "company_margin": state.margin,
        "company_capital_gain": state.gain,
        "company_capital": state.capital,
        "company_bankrupt": state.bankrupt,
        "investor_investments": state.holdings,
        "investor_cash": state.cash,
        "investor_capital": state.investor_capital,
        "investor_utility": state.utility,
    }


#: Golden arrays that must match exactly (integers and the floored amounts).
EXACT = ("events", "climate_event_occurrence", "investment_amount", "company_bankrupt", "terminated", "truncated")
