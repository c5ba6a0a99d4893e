"""InvestESG as a jaxclimate environment (Hou, Yuan & Jaques; reference: docs/invest_esg.md).

Two agent groups share one market and one observation:

* ``"companies"`` (N_C): a ``Box(0, cap, (3,))`` action — this year's fractions of capital
  spent on mitigation, greenwashing and resilience (env space; the policy-side transform
  ``clip((a + 1)/2 · cap, 0, cap)`` of the original's trainers belongs to the learner). The
  reward is the absolute capital gain of the year, investors' money included.
* ``"investors"`` (N_I): a ``MultiBinary(N_C)`` action — invest in company i or not. The
  reward is the portfolio's return rate plus α × its holdings-weighted ESG score.

Each step follows the original's order (docs/invest_esg.md §3): investors divest everything,
reinvest an equal (by default floored to whole units) share of their cash in the chosen
companies; companies spend on mitigation / greenwashing / resilience from the post-inflow
capital; cumulative mitigation lowers the growth of the three hazard probabilities (paper
Eq. 1); climate events fire; capital grows by 1 + γ, less spending, less L per event (Eqs.
8–9); holdings earn the company's margin (Eq. 10); investors collect utility. Everything is
an array operation over the company and investor axes, so the compiled step does not grow
with N_C or N_I.

Climate events come from the step key by default (independent Bernoulli draws, as paper
Eq. 2 says). ``event_mode="reference_events"`` replays the original's fixed calendar (the
same years in every episode and environment), ``"injected"`` reads ``params.event_uniforms``
(common random numbers, golden replays).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core import struct
from jaxclimate.core.env import Capabilities, Environment, EnvState
from jaxclimate.core.spaces import Box, MultiBinary
from jaxclimate.envs.invest_esg.params import InvestESGParams, MarketConfig, market_config

COMPANIES, INVESTORS = "companies", "investors"
START_YEAR = 2021
COMPANY_FEATURES = 7  # K, L, margin, Q·f1, avgQ·f2, (cumM + cumG)·f3, cumR·f4
EVENT_MODES = ("key", "reference_events", "injected")
ROUNDINGS = ("floor", "exact")
COMPANY_REWARDS = ("gain", "own_gain")
BANKRUPT_SEMANTICS = ("reference", "exit")
DAMAGE_DRAWS = ("per_event", "per_year")
MITIGATION, GREENWASH, RESILIENCE = 0, 1, 2


def load_reference_event_uniforms() -> np.ndarray:
    """The original's fixed event calendar, (1000, 3) float64: row t holds the uniforms
    ``default_rng(100t / 500t / 1000t).random()`` compared with the hazard probabilities of
    year t (data/PROVENANCE.md)."""
    with resources.files("jaxclimate.envs.invest_esg").joinpath("data/reference_event_uniforms.npy").open("rb") as f:
        return np.load(f)


REFERENCE_EVENT_UNIFORMS = load_reference_event_uniforms()


@struct.dataclass
class InvestESGState(EnvState):
    """One market after ``time`` steps (year ``2021 + time``).

    Companies (N_C,): ``capital`` K (investors' money included), ``loss`` L (capital share
    lost per event), ``cumulative`` (N_C, 3) spending amounts (mitigation, greenwash,
    resilience), ``fractions`` (N_C, 3) applied this year, ``esg_score`` Q, ``margin``,
    ``gain``, ``bankrupt``; ``esg_score_sum`` holds Q summed over the years before the
    last one (the average-ESG observation lags a year); ``margin_history`` the margins of the
    previous ``bankrupt_window − 1`` years (stricter bankruptcy). Investors: ``holdings``
    (N_I, N_C) after this year's return, ``cash``, ``investor_capital`` V, ``utility``.
    Climate: ``hazard_prob`` (3,), ``climate_risk``, ``events`` (3,) and ``event_count`` X of
    this year, ``market_performance``. Episode sums for the metrics: ``event_total``,
    ``risk_total``, ``investor_capital_total`` (N_I,), ``holdings_total`` (N_I, N_C).
    """

    capital: jax.Array
    loss: jax.Array
    cumulative: jax.Array
    fractions: jax.Array
    esg_score: jax.Array
    esg_score_sum: jax.Array
    margin: jax.Array
    gain: jax.Array
    bankrupt: jax.Array
    margin_history: jax.Array
    holdings: jax.Array
    cash: jax.Array
    investor_capital: jax.Array
    utility: jax.Array
    hazard_prob: jax.Array
    climate_risk: jax.Array
    events: jax.Array
    event_count: jax.Array
    market_performance: jax.Array
    event_total: jax.Array
    risk_total: jax.Array
    investor_capital_total: jax.Array
    holdings_total: jax.Array


def climate_risk(hazard_prob: jax.Array) -> jax.Array:
    """P(at least one event) = 1 − Π_e (1 − P_e) (paper §4.3)."""
    return 1.0 - jnp.prod(1.0 - hazard_prob, axis=-1)


def hazard_probabilities(t: jax.Array, total_mitigation: jax.Array, params: InvestESGParams) -> jax.Array:
    """P_e = P0_e + μ_e · t / (1 + λ_e · U) (paper Eq. 1), unclipped unless
    ``params.clip_probabilities``; ``t`` is the 0-based year index."""
    p = params.hazard_base + params.hazard_drift * t / (1.0 + params.hazard_mitigation * total_mitigation)
    return jnp.where(params.clip_probabilities, jnp.clip(p, 0.0, 1.0), p)


def invest(cash: jax.Array, choices: jax.Array, exact: bool) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Split each investor's cash equally over the chosen companies (paper Eq. 4).

    ``cash`` (N_I,), ``choices`` (N_I, N_C) in {0, 1}. With ``exact=False`` (the original)
    the amount per company is floored to whole units and the remainder stays idle; an
    investor with less cash than choices invests nothing. Returns (amount per company
    (N_I,), holdings (N_I, N_C), idle cash (N_I,))."""
    count = jnp.sum(choices, axis=1)
    share = cash / jnp.maximum(count, 1.0)
    amount = jnp.where(count > 0, share if exact else jnp.floor(share), 0.0)
    holdings = choices * amount[:, None]
    return amount, holdings, cash - count * amount


class InvestESG(Environment[InvestESGState, InvestESGParams]):
    """InvestESG (see module docstring).

    Args:
        config: a market name (``jaxclimate.envs.invest_esg.CONFIGS``: the original's
            experiment files, e.g. ``"exp_default"`` — the paper default —, ``"exp_a3"``,
            ``"scale_25x25"``; or an alias such as ``"mandate"``), a ``MarketConfig``, or a
            mapping of its fields. It fixes the number of companies and investors and the
            default parameters.
        event_mode: ``"key"`` (default: independent draws from the step key),
            ``"reference_events"`` (the original's fixed calendar, for parity and to train as
            the authors did) or ``"injected"`` (``params.event_uniforms``, default the same
            calendar: replace it for common random numbers).
        investment_rounding: ``"floor"`` (the original: whole units, remainder idle) or
            ``"exact"``; default: the config's (floor except the scaled markets).
        company_reward: ``"gain"`` (the original: capital gain including investors' money)
            or ``"own_gain"`` (the gain on the company's own capital only).
        bankrupt_semantics: ``"reference"`` (a bankrupt company stays investable and its
            holders keep compounding at its last margin, as the original) or ``"exit"``
            (reward 0, holdings frozen, bits for it ignored).
        strict_bankruptcy: also declare bankruptcy after ``bankrupt_window`` consecutive
            margins below ``params.bankrupt_margin_threshold`` (the paper's appendix rule).
        uncertain_damage: each event's loss is drawn from N(L, ``params.damage_std``) clipped
            to [0, 1], independently per company and hazard (``damage_draw="per_event"``) or
            once per company and year (``"per_year"``), instead of the fixed L.
        action_cap: upper bound of each spending fraction (0.05 in every experiment).
        scripted_companies: companies the market config hard-codes (``exp_e2``) play their
            fixed action whatever they are given (the original's "Hardcoded" agents).
        dtype: ``"float32"`` or ``"float64"`` (parity; needs ``jax_enable_x64``).
    """

    def __init__(
        self,
        config: Any = "exp_default",
        event_mode: str = "key",
        investment_rounding: str | None = None,
        company_reward: str = "gain",
        bankrupt_semantics: str = "reference",
        strict_bankruptcy: bool = False,
        bankrupt_window: int = 3,
        uncertain_damage: bool = False,
        damage_draw: str = "per_event",
        action_cap: float = 0.05,
        scripted_companies: bool = True,
        dtype: Any = "float32",
    ):
        self.config: MarketConfig = market_config(config)
        rounding = self.config.investment_rounding if investment_rounding is None else investment_rounding
        for option, value, allowed in (
            ("event_mode", event_mode, EVENT_MODES),
            ("investment_rounding", rounding, ROUNDINGS),
            ("company_reward", company_reward, COMPANY_REWARDS),
            ("bankrupt_semantics", bankrupt_semantics, BANKRUPT_SEMANTICS),
            ("damage_draw", damage_draw, DAMAGE_DRAWS),
        ):
            if value not in allowed:
                raise ValueError(f"InvestESG.{option} must be one of {allowed}, got {value!r}")
        for option, value in (("strict_bankruptcy", strict_bankruptcy), ("uncertain_damage", uncertain_damage)):
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"InvestESG.{option} must be a bool, got {value!r}")
        if not isinstance(bankrupt_window, (int, np.integer)) or bankrupt_window < 1:
            raise ValueError(f"InvestESG.bankrupt_window must be an integer >= 1, got {bankrupt_window!r}")
        if not 0.0 < float(action_cap) < 1.0 / 3.0 + 1e-12:
            raise ValueError(f"InvestESG.action_cap must lie in (0, 1/3] (three fractions must not exceed the capital), got {action_cap!r}")
        self.event_mode = event_mode
        self.exact_investment = rounding == "exact"
        self.investment_rounding = rounding
        self.company_reward = company_reward
        self.bankrupt_semantics = bankrupt_semantics
        self.strict_bankruptcy = bool(strict_bankruptcy)
        self.bankrupt_window = int(bankrupt_window)
        self.uncertain_damage = bool(uncertain_damage)
        self.damage_draw = damage_draw
        self.action_cap = float(action_cap)
        scripted = self.config.hardcoded_company_actions if scripted_companies else None
        if scripted is not None and len(scripted) != self.config.num_companies:
            raise ValueError(f"InvestESG: hardcoded_company_actions needs one action per company ({self.config.num_companies}), got {len(scripted)}")
        self.scripted_actions = None if scripted is None else np.asarray(scripted, np.float64)
        self.dtype = struct.check_env_dtype("InvestESG", dtype)
        self.num_companies = nc = self.config.num_companies
        self.num_investors = ni = self.config.num_investors
        if nc < 1:
            raise ValueError("InvestESG: the market needs at least one company")
        if ni < 1:
            raise ValueError("InvestESG: the market needs at least one investor (give it capital 0 for a market without investors)")
        self.agents = {COMPANIES: nc, INVESTORS: ni}
        self.obs_dim = COMPANY_FEATURES * nc + ni * (nc + 1) + 3
        self._spaces = {
            COMPANIES: (Box(-np.inf, np.inf, (self.obs_dim,), self.dtype), Box(0.0, self.action_cap, (3,), jnp.float32)),
            INVESTORS: (Box(-np.inf, np.inf, (self.obs_dim,), self.dtype), MultiBinary(nc)),
        }

    @property
    def name(self) -> str:
        return f"invest-esg[{self.num_companies}x{self.num_investors}]"

    @property
    def default_params(self) -> InvestESGParams:
        params = self.config.params()
        if self.event_mode == "injected":
            params = params.replace(event_uniforms=REFERENCE_EVENT_UNIFORMS[: params.max_steps].copy())
        return params

    def observation_space(self, group: str | None = None) -> Box:
        self._check_group(group)
        return self._spaces[group][0]

    def action_space(self, group: str | None = None):
        self._check_group(group)
        return self._spaces[group][1]

    # --- reset ------------------------------------------------------------------------------
    @property
    def capabilities(self) -> Capabilities:
        """Episode metrics: the original's per-episode log (:func:`episode_metrics`)."""
        return Capabilities(episode_metrics=EPISODE_METRICS)

    def episode_metrics(self, state: InvestESGState, params: InvestESGParams) -> dict[str, jax.Array]:
        """:func:`episode_metrics` of ``state`` (``step`` adds them to ``info``)."""
        return episode_metrics(state)

    def reset_env(self, key: jax.Array, params: InvestESGParams) -> tuple[dict, InvestESGState]:
        state = self.initial_state(params)
        return self.observation(state, params), state

    def initial_state(self, params: InvestESGParams) -> InvestESGState:
        """The market at the start of an episode (docs/invest_esg.md §2): K = K0, L = L0,
        cash = V = V0, nothing held or spent, P = P0, market performance 1.0."""
        p = self._cast(params)
        nc, ni, f = self.num_companies, self.num_investors, self.dtype
        zeros_c = jnp.zeros((nc,), f)
        return InvestESGState(
            time=jnp.zeros((), jnp.int32),
            capital=p.company_capital,
            loss=p.loss_fraction,
            cumulative=jnp.zeros((nc, 3), f),
            fractions=jnp.zeros((nc, 3), f),
            esg_score=zeros_c,
            esg_score_sum=zeros_c,
            margin=zeros_c,
            gain=zeros_c,
            bankrupt=jnp.zeros((nc,), bool),
            margin_history=jnp.zeros((nc, self.bankrupt_window - 1), f),
            holdings=jnp.zeros((ni, nc), f),
            cash=p.investor_capital,
            investor_capital=p.investor_capital,
            utility=jnp.zeros((ni,), f),
            hazard_prob=p.hazard_base,
            climate_risk=climate_risk(p.hazard_base),
            events=jnp.zeros((3,), bool),
            event_count=jnp.zeros((), jnp.int32),
            market_performance=jnp.ones((), f),
            event_total=jnp.zeros((), jnp.int32),
            risk_total=jnp.zeros((), f),
            investor_capital_total=jnp.zeros((ni,), f),
            holdings_total=jnp.zeros((ni, nc), f),
        )

    # --- step ---------------------------------------------------------------------------------
    def step_env(self, key: jax.Array, state: InvestESGState, actions: dict, params: InvestESGParams):
        state, rewards, info = self.transition(key, state, actions[COMPANIES], actions[INVESTORS], params)
        terminated = state.time >= params.max_steps  # the game ends in 2120: a true terminal, nothing to bootstrap
        return self.observation(state, params), state, rewards, terminated, info

    def transition(
        self,
        key: jax.Array,
        state: InvestESGState,
        company_actions: jax.Array,
        investor_choices: jax.Array,
        params: InvestESGParams,
        event_uniforms: jax.Array | None = None,
    ) -> tuple[InvestESGState, dict, dict]:
        """One year (docs/invest_esg.md §3, steps S1–S9): ``(state, rewards, info)``.

        ``company_actions`` (N_C, 3) env-space fractions (not clipped: the original accepts
        any), ``investor_choices`` (N_I, N_C) bits. ``event_uniforms`` (3,) overrides the
        event source (used by tests and scripted experiments)."""
        self._check_param_shapes(params)
        p = self._cast(params)
        f = self.dtype
        noise = self._draw_noise(key, p)
        live = ~state.bankrupt
        t = state.time
        if self.scripted_actions is not None:
            company_actions = jnp.asarray(self.scripted_actions, f)
        choices = jnp.asarray(investor_choices).astype(f)
        if self.bankrupt_semantics == "exit":
            choices = choices * live.astype(f)[None, :]

        own_capital, amount, holdings, cash = self._reinvest(state, choices)
        invested_capital = capital = own_capital + jnp.sum(holdings, axis=0)

        # S3: spending from the post-inflow capital (paper Eqs. 5-7); disabled kinds are 0.
        allowed = jnp.stack([jnp.ones((), f), p.allow_greenwash.astype(f), p.allow_resilience.astype(f)])
        fractions = jnp.where(live[:, None], jnp.asarray(company_actions).astype(f) * allowed, state.fractions)
        spent = jnp.where(live[:, None], fractions * capital[:, None], 0.0)
        cumulative = state.cumulative + spent
        safe_capital = jnp.where(live, capital, 1.0)
        loss = jnp.where(live, p.loss_fraction * jnp.exp(-p.resilience_efficiency * cumulative[:, RESILIENCE] / safe_capital), state.loss)
        esg_score = jnp.where(live, fractions[:, MITIGATION] + p.greenwash_coef * fractions[:, GREENWASH], state.esg_score)

        # S4: hazards fall with the market's cumulative mitigation (paper Eq. 1).
        hazard_prob = hazard_probabilities(t.astype(f), jnp.sum(cumulative[:, MITIGATION]), p)
        risk = climate_risk(hazard_prob)
        # S5: market growth and climate events (paper Eq. 2).
        market = p.market_growth + p.market_noise * noise["market"]
        uniforms = self._event_uniforms(noise["events"], t, p) if event_uniforms is None else jnp.asarray(event_uniforms, f)
        events = uniforms < hazard_prob
        event_count = jnp.sum(events, dtype=jnp.int32)

        # S6: capital grows, less spending and climate losses (paper Eqs. 8-9).
        growth = market + p.company_noise * noise["company"]
        new_capital = capital * (1.0 - jnp.sum(fractions, axis=1)) * growth * self._damage_factor(noise["damage"], loss, events, p)
        new_gain = new_capital - capital
        new_margin = new_gain / safe_capital
        capital = jnp.where(live, new_capital, capital)
        gain = jnp.where(live, new_gain, state.gain)
        margin = jnp.where(live, new_margin, state.margin)
        bankrupt, margin_history = self._bankruptcy(state, capital, margin, live, p)

        holdings, utility, investor_capital = self._investor_returns(state, holdings, cash, margin, live, esg_score, p)

        company_reward = gain if self.company_reward == "gain" else margin * own_capital
        company_reward = jnp.where(live, company_reward, 0.0) if self.bankrupt_semantics == "exit" else company_reward

        new = state.replace(
            time=t + 1,
            capital=capital,
            loss=loss,
            cumulative=cumulative,
            fractions=fractions,
            esg_score=esg_score,
            esg_score_sum=state.esg_score_sum + state.esg_score,
            margin=margin,
            gain=gain,
            bankrupt=bankrupt,
            margin_history=margin_history,
            holdings=holdings,
            cash=cash,
            investor_capital=investor_capital,
            utility=utility,
            hazard_prob=hazard_prob,
            climate_risk=risk,
            events=events,
            event_count=event_count,
            market_performance=market,
            event_total=state.event_total + event_count,
            risk_total=state.risk_total + risk,
            investor_capital_total=state.investor_capital_total + investor_capital,
            holdings_total=state.holdings_total + holdings,
        )
        info = {
            "investment_amount": amount,
            "capital_after_divest": own_capital,
            "capital_after_invest": invested_capital,
            "spent": spent,
            "event_uniforms": uniforms,
            "climate_risk": risk,
            "event_count": event_count,
        }
        return new, {COMPANIES: company_reward, INVESTORS: utility}, info

    def _reinvest(self, state: InvestESGState, choices: jax.Array) -> tuple[jax.Array, ...]:
        """Steps S1–S2 of :meth:`transition`: ``(own capital, amount, holdings, cash)``."""
        # S1: every investor takes out all holdings (last year's return included).
        cash = state.cash + jnp.sum(state.holdings, axis=1)
        own_capital = state.capital - jnp.sum(state.holdings, axis=0)
        # S2: reinvest an equal share of cash in the chosen companies (paper Eq. 4).
        amount, holdings, cash = invest(cash, choices, self.exact_investment)
        return own_capital, amount, holdings, cash

    def _bankruptcy(self, state: InvestESGState, capital: jax.Array, margin: jax.Array, live: jax.Array, p) -> tuple[jax.Array, jax.Array]:
        """Who is bankrupt after this year (capital gone, or under ``strict_bankruptcy`` a margin
        below the threshold for ``bankrupt_window`` years), and the updated margin history."""
        bankrupt = state.bankrupt | (capital <= 0.0)
        margin_history = state.margin_history
        if self.strict_bankruptcy:
            below = jnp.all(margin_history < p.bankrupt_margin_threshold, axis=1) & (margin < p.bankrupt_margin_threshold)
            bankrupt = bankrupt | (live & below & (state.time + 1 >= self.bankrupt_window))
        if self.bankrupt_window > 1:
            margin_history = jnp.concatenate([margin_history[:, 1:], margin[:, None]], axis=1)
        return bankrupt, margin_history

    def _investor_returns(
        self, state: InvestESGState, holdings: jax.Array, cash: jax.Array, margin: jax.Array, live: jax.Array, esg_score: jax.Array, p
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Steps S7–S8 of :meth:`transition`: ``(holdings, utility, investor_capital)``."""
        # S7: holdings earn the company's margin (paper Eq. 10); a bankrupt company's last
        # margin keeps applying under the original's semantics, none under "exit".
        holder_margin = margin if self.bankrupt_semantics == "reference" else jnp.where(live, margin, 0.0)
        holdings = jnp.maximum(holdings * (1.0 + holder_margin)[None, :], 0.0)

        # S8: investor utility = return rate + α · holdings-weighted ESG score (paper §4.3).
        previous = state.investor_capital
        new_value = jnp.sum(holdings, axis=1) + cash
        has_capital = previous != 0.0
        esg = jnp.sum(holdings * esg_score[None, :], axis=1) / jnp.where(new_value != 0.0, new_value, 1.0)
        utility = jnp.where(has_capital, (new_value - previous) / jnp.where(has_capital, previous, 1.0) + p.esg_preference * esg, 0.0)
        return holdings, utility, jnp.where(has_capital, new_value, previous)

    def _cast(self, params: InvestESGParams) -> InvestESGParams:
        return struct.cast_numeric(params, self.dtype).replace(max_steps=params.max_steps)

    def _draw_noise(self, key: jax.Array, p: InvestESGParams) -> dict[str, jax.Array]:
        """This year's randomness from the step key: event uniforms (``event_mode="key"``),
        standard normals for the market and each company's growth — drawn only when some
        noise std is positive (``lax.cond``: a real branch when the parameters are not batched,
        as in training; random-bit generation is a large part of a step) — and, with uncertain
        damage, one per company and hazard (or year)."""
        nc, f = self.num_companies, self.dtype
        events = jax.random.uniform(key, (3,), f) if self.event_mode == "key" else None
        noisy = (p.market_noise > 0) | jnp.any(p.company_noise > 0)
        growth = jax.lax.cond(noisy, lambda k: jax.random.normal(jax.random.fold_in(k, 1), (1 + nc,), f), lambda k: jnp.zeros((1 + nc,), f), key)
        damage = None
        if self.uncertain_damage:
            shape = (nc, 3) if self.damage_draw == "per_event" else (nc, 1)
            damage = jax.random.normal(jax.random.fold_in(key, 2), shape, f)
        return {"events": events, "market": growth[0], "company": growth[1:], "damage": damage}

    def _event_uniforms(self, drawn: jax.Array, t: jax.Array, p: InvestESGParams) -> jax.Array:
        if self.event_mode == "key":
            return drawn
        table = jnp.asarray(REFERENCE_EVENT_UNIFORMS, self.dtype) if self.event_mode == "reference_events" else p.event_uniforms
        return jax.lax.dynamic_index_in_dim(table, jnp.minimum(t, table.shape[0] - 1), keepdims=False)

    def _damage_factor(self, normals: jax.Array | None, loss: jax.Array, events: jax.Array, p: InvestESGParams) -> jax.Array:
        """The capital kept after this year's events: 1 − L·X, or with uncertain damage
        1 − Σ_e event_e·D_ie, D ~ clip(N(L, σ_D), 0, 1) per company and hazard (or one D per
        company and year: 1 − D·X)."""
        count = jnp.sum(events).astype(self.dtype)
        if not self.uncertain_damage:
            return 1.0 - loss * count
        draws = jnp.clip(loss[:, None] + p.damage_std * normals, 0.0, 1.0)  # (N_C, 3) per event, (N_C, 1) per year
        if self.damage_draw == "per_year":
            return 1.0 - draws[:, 0] * count
        return 1.0 - jnp.sum(draws * events.astype(self.dtype)[None, :], axis=1)

    def _check_param_shapes(self, params: InvestESGParams) -> None:
        """Trace-time check that the parameters describe this env's market."""
        for name, n in (("company_capital", self.num_companies), ("investor_capital", self.num_investors)):
            got = jnp.shape(getattr(params, name))[-1:]
            if tuple(got) != (n,):
                raise ValueError(
                    f"InvestESG: params.{name} has {tuple(got)} entries but the env was built for {n} "
                    f"({self.name}); build the env from the same config as the parameters"
                )
        if self.event_mode == "injected":
            table = params.event_uniforms
            if table is None or jnp.ndim(table) != 2 or jnp.shape(table)[1] != 3:
                raise ValueError("InvestESG(event_mode='injected') needs params.event_uniforms of shape (>= max_steps, 3)")

    # --- observation --------------------------------------------------------------------------
    def observation(self, state: InvestESGState, params: InvestESGParams) -> dict:
        """The shared observation (docs/invest_esg.md §4), the same vector for every agent:
        per company [K, L, margin, Q·f1, avgQ·f2, (cumM + cumG)·f3, cumR·f4], per investor
        [holdings…, capital V], then [climate risk, X, market performance]·f5; disabled
        features are 0 and keep their slots."""
        vector = self.observe(state, params)
        return {
            COMPANIES: jnp.broadcast_to(vector, (self.num_companies, self.obs_dim)),
            INVESTORS: jnp.broadcast_to(vector, (self.num_investors, self.obs_dim)),
        }

    def observe(self, state: InvestESGState, params: InvestESGParams) -> jax.Array:
        """The (obs_dim,) observation vector of ``state``."""
        f = self.dtype
        flag = lambda on: jnp.asarray(on).astype(f)  # noqa: E731
        years_before = (state.time - 1).astype(f)
        average_esg = jnp.where(years_before > 0, state.esg_score_sum / jnp.maximum(years_before, 1.0), 0.0)
        cum = state.cumulative
        companies = jnp.stack(
            [
                state.capital,
                state.loss,
                state.margin,
                state.esg_score * flag(params.esg_score_observable),
                average_esg * flag(params.avg_esg_score_observable),
                (cum[:, MITIGATION] + cum[:, GREENWASH]) * flag(params.esg_spending_observable),
                cum[:, RESILIENCE] * flag(params.resilience_spending_observable),
            ],
            axis=1,
        )
        investors = jnp.concatenate([state.holdings, state.investor_capital[:, None]], axis=1)
        climate = jnp.stack([state.climate_risk, state.event_count.astype(f), state.market_performance]) * flag(params.climate_observable)
        return jnp.concatenate([companies.reshape(-1), investors.reshape(-1), climate]).astype(f)

    # --- helpers ------------------------------------------------------------------------------
    def policy_to_env(self, raw: jax.Array) -> jax.Array:
        """The original trainers' company transform ``clip((a + 1)/2 · cap, 0, cap)`` from an
        unbounded Gaussian sample to env-space fractions (computed in float32 as they do)."""
        raw = jnp.asarray(raw, jnp.float32)
        return jnp.clip((raw + 1.0) / 2.0 * jnp.float32(self.action_cap), 0.0, jnp.float32(self.action_cap))


def market_wealth(state: InvestESGState) -> jax.Array:
    """W = Σ_i K_i + Σ_j cash_j: every unit once (company capital already holds investors'
    money; the paper's printed W100 would count holdings twice; docs/invest_esg.md §6)."""
    return jnp.sum(state.capital, axis=-1) + jnp.sum(state.cash, axis=-1)


#: The names of :func:`episode_metrics`, in its order (``InvestESG.capabilities``).
EPISODE_METRICS = (
    "final_climate_risk",
    "final_market_wealth",
    "climate_events",
    "cumulative_climate_risk",
    "total_mitigation",
    "total_greenwash",
    "total_resilience",
    "bankrupt_companies",
    "company_mitigation",
    "company_final_capital",
    "investor_mean_capital",
    "investment_shares",
)


def episode_metrics(state: InvestESGState) -> dict[str, jax.Array]:
    """The original's per-episode log (docs/invest_esg.md §6), read from the state after an
    episode's last step: the paper's P100 (final climate risk, unclipped) and W100 (final
    market wealth), events and climate risk summed over the years, cumulative mitigation /
    greenwash / resilience spending, bankrupt companies, and per investor the average
    capital and investment shares (Σ_t holdings normalised per investor)."""
    years = jnp.maximum(state.time, 1).astype(state.risk_total.dtype)
    totals = jnp.sum(state.cumulative, axis=-2)
    held = state.holdings_total
    shares = held / jnp.maximum(jnp.sum(held, axis=-1, keepdims=True), 1e-12)
    return {
        "final_climate_risk": state.climate_risk,
        "final_market_wealth": market_wealth(state),
        "climate_events": state.event_total,
        "cumulative_climate_risk": state.risk_total,
        "total_mitigation": totals[..., MITIGATION],
        "total_greenwash": totals[..., GREENWASH],
        "total_resilience": totals[..., RESILIENCE],
        "bankrupt_companies": jnp.sum(state.bankrupt, axis=-1),
        "company_mitigation": state.cumulative[..., MITIGATION],
        "company_final_capital": state.capital,
        "investor_mean_capital": state.investor_capital_total / years,
        "investment_shares": shares,
    }
