"""InvestESG parameters: the traced values of a market (``InvestESGParams``) and the named
market configurations of the original code and the paper (``MarketConfig``, ``CONFIGS``).

Everything a study sweeps is a pytree leaf of :class:`InvestESGParams`: per-company capital,
loss fraction L0, resilience efficiency η, greenwash weight β and growth noise; per-investor
capital and ESG preference α; the hazard constants P0, μ, λ; market growth and noise; and the
switches that the original toggles per experiment (greenwash / resilience spending, the five
observation flags, probability clipping). So the paper's status quo and mandate settings, or
α ∈ {0.5, 1, 10, 100}, run as one ``vmap`` over parameters in one compiled program. The
number of companies and investors, the horizon of the event table and the modes that change
the program (event source, investment rounding, bankruptcy rules) are constructor options of
:class:`~jaxclimate.envs.invest_esg.InvestESG`.

Reference: docs/invest_esg.md; the original code is github.com/yuanjiayiy/InvestESG at
a53c88b (``env/pettingzoo/investesg.py``, experiment files under ``config/``).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Mapping, Sequence

import numpy as np

from jaxclimate.core import struct
from jaxclimate.core.env import EnvParams

#: Hazards in the order of every (3,) array: extreme heat, heavy precipitation, drought.
HAZARDS = ("heat", "precipitation", "drought")
#: Initial probabilities P0 (paper §4.3, from the IPCC), drift per year μ and mitigation
#: effectiveness λ of paper Eq. 1 (the original hard-codes μ and λ).
HAZARD_BASE = (0.28, 0.13, 0.17)
HAZARD_DRIFT = (0.0083, 0.0018, 0.003)
HAZARD_MITIGATION = (0.0222, 0.0326, 0.038)


@struct.dataclass
class InvestESGParams(EnvParams):
    """Traced parameters of one market (defaults: the paper's 5 companies × 10 and
    3 investors × 16.7 with α = 0, no ESG disclosure).

    Company arrays have one entry per company (``company_capital`` K0, ``loss_fraction`` L0
    — the capital share lost per climate event —, ``resilience_efficiency`` η,
    ``greenwash_coef`` β, ``company_noise`` the std of a company's growth noise); investor
    arrays one per investor (``investor_capital`` V0, ``esg_preference`` α). Hazard arrays
    are (heat, precipitation, drought). ``market_growth`` is 1 + γ; ``market_noise`` the std
    of the market-growth noise. ``event_uniforms`` ((≥ max_steps, 3), in [0, 1)) feeds
    ``event_mode="injected"`` and is ``None`` otherwise.
    """

    max_steps: int = 100
    company_capital: Any = struct.field(default_factory=lambda: np.full(5, 10.0))
    loss_fraction: Any = struct.field(default_factory=lambda: np.full(5, 0.07))
    resilience_efficiency: Any = struct.field(default_factory=lambda: np.full(5, 3.0))
    greenwash_coef: Any = struct.field(default_factory=lambda: np.full(5, 2.0))
    company_noise: Any = struct.field(default_factory=lambda: np.zeros(5))
    investor_capital: Any = struct.field(default_factory=lambda: np.full(3, 16.7))
    esg_preference: Any = struct.field(default_factory=lambda: np.zeros(3))
    hazard_base: Any = struct.field(default_factory=lambda: np.asarray(HAZARD_BASE))
    hazard_drift: Any = struct.field(default_factory=lambda: np.asarray(HAZARD_DRIFT))
    hazard_mitigation: Any = struct.field(default_factory=lambda: np.asarray(HAZARD_MITIGATION))
    market_growth: float = 1.1
    market_noise: float = 0.0
    allow_greenwash: bool = False
    allow_resilience: bool = False
    esg_score_observable: bool = False
    avg_esg_score_observable: bool = False
    esg_spending_observable: bool = False
    resilience_spending_observable: bool = False
    climate_observable: bool = False
    clip_probabilities: bool = False
    damage_std: float = 0.1
    bankrupt_margin_threshold: float = -0.1
    event_uniforms: Any = None

    def validate(self) -> None:
        super().validate()
        name = type(self).__name__
        check = functools.partial(struct.check_range, name)
        check("company_capital", self.company_capital, low=0.0, low_inclusive=False)
        check("loss_fraction", self.loss_fraction, low=0.0, high=1.0)
        check("resilience_efficiency", self.resilience_efficiency, low=0.0)
        check("greenwash_coef", self.greenwash_coef, low=0.0)
        check("company_noise", self.company_noise, low=0.0)
        check("investor_capital", self.investor_capital, low=0.0)
        check("esg_preference", self.esg_preference)
        for field in ("hazard_base", "hazard_drift", "hazard_mitigation"):
            check(field, getattr(self, field), low=0.0, shape=(3,))
        check("hazard_base", self.hazard_base, high=1.0)
        check("market_growth", self.market_growth, low=0.0, low_inclusive=False)
        check("market_noise", self.market_noise, low=0.0)
        check("damage_std", self.damage_std, low=0.0)
        check("bankrupt_margin_threshold", self.bankrupt_margin_threshold, low=-1.0, high=0.0)
        if self.event_uniforms is not None:
            check("event_uniforms", self.event_uniforms, low=0.0, high=1.0, high_inclusive=False)
        _check_same_length(name, ("company_capital", "loss_fraction", "resilience_efficiency", "greenwash_coef", "company_noise"), self)
        _check_same_length(name, ("investor_capital", "esg_preference"), self)

    @property
    def num_companies(self) -> int:
        return int(np.shape(self.company_capital)[-1])

    @property
    def num_investors(self) -> int:
        return int(np.shape(self.investor_capital)[-1])


def _check_same_length(owner: str, names: Sequence[str], params: Any) -> None:
    lengths = {n: np.shape(getattr(params, n))[-1:] for n in names if struct.concrete_value(getattr(params, n)) is not None}
    if len(set(lengths.values())) > 1:
        raise ValueError(
            f"{owner}: {', '.join(names)} must have one entry per agent (the same length); got "
            + ", ".join(f"{n} {tuple(s)}" for n, s in lengths.items())
        )


# --- named markets ------------------------------------------------------------------------------------


#: Per-agent parameters: a market config may give one value for all companies (investors).
PER_COMPANY = ("loss_fraction", "resilience_efficiency", "greenwash_coef", "company_noise")
PER_INVESTOR = ("esg_preference",)


@dataclasses.dataclass(frozen=True)
class MarketConfig:
    """A market as the original's experiment files describe it (docs/invest_esg.md §7).

    The companies' and investors' capitals fix the market's size; ``overrides`` set any other
    :class:`InvestESGParams` field (per-company and per-investor values may be one number for
    all). Besides the environment's values a config records what the original's trainer did
    with the agents: ``hardcoded_company_actions`` (one env-space action per company: the
    companies play it every year and do not learn, experiment ``exp_e2``) and
    ``company_learning_starts`` (companies start updating after this many env steps, the
    ``_with_memory`` files)."""

    company_capital: tuple[float, ...]
    investor_capital: tuple[float, ...]
    overrides: tuple[tuple[str, Any], ...] = ()
    investment_rounding: str = "floor"
    hardcoded_company_actions: tuple[tuple[float, float, float], ...] | None = None
    company_learning_starts: int = 0
    description: str = ""
    source: str = ""

    @classmethod
    def create(cls, company_capital: Sequence[float], investor_capital: Sequence[float], **settings: Any) -> "MarketConfig":
        """A config from capitals and keyword settings: :class:`MarketConfig` fields, or else
        :class:`InvestESGParams` fields (collected as ``overrides``)."""
        own = {f.name for f in dataclasses.fields(cls)} - {"company_capital", "investor_capital", "overrides"}
        params = {f.name for f in dataclasses.fields(InvestESGParams)}
        unknown = sorted(set(settings) - own - params)
        if unknown:
            raise ValueError(
                f"InvestESG config: unknown setting(s) {unknown}; market settings are {sorted(own)}, "
                f"parameters {sorted(params - {'company_capital', 'investor_capital'})}"
            )
        overrides = tuple((k, _hashable(v)) for k, v in settings.items() if k not in own)
        return cls(
            tuple(float(c) for c in company_capital),
            tuple(float(c) for c in investor_capital),
            overrides,
            **{k: v for k, v in settings.items() if k in own},
        )

    @property
    def num_companies(self) -> int:
        return len(self.company_capital)

    @property
    def num_investors(self) -> int:
        return len(self.investor_capital)

    def params(self) -> InvestESGParams:
        """The environment parameters of this market (float64 NumPy leaves; defaults for
        everything the config does not set)."""
        defaults = InvestESGParams()
        values = dict(self.overrides)
        for names, n in ((PER_COMPANY, self.num_companies), (PER_INVESTOR, self.num_investors)):
            for name in names:
                value = values.get(name, np.asarray(getattr(defaults, name))[0])
                values[name] = np.broadcast_to(np.asarray(value, np.float64), (n,)).copy()
        return defaults.replace(company_capital=np.asarray(self.company_capital), investor_capital=np.asarray(self.investor_capital), **values)


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, (list, np.ndarray)) else value


def _market(companies: int, company_capital: float, investors: int, investor_capital: float, **kw: Any) -> MarketConfig:
    return MarketConfig.create((company_capital,) * companies, (investor_capital,) * investors, **kw)


_PAPER = dict(companies=5, company_capital=10.0, investors=3, investor_capital=16.7)
_MANDATE = dict(esg_score_observable=True)


def _paper(**kw: Any) -> MarketConfig:
    return _market(**_PAPER, **kw)


#: The original's experiment files by name (``config/domain/<name>.yaml``, plus the top-level
#: ``config/exp_default.yaml`` as ``exp_default``), and two scaled markets the paper's Fig. 7
#: uses but the original does not ship (equal capital split, exact investment split).
CONFIGS: dict[str, MarketConfig] = {
    "exp_default": _paper(
        description="paper default / status quo: no ESG disclosure, profit-only investors (Fig. 3)", source="config/exp_default.yaml"
    ),
    "exp_5*10+3*16.7": _paper(description="status quo (same market as exp_default)", source="config/domain/exp_5*10+3*16.7.yaml"),
    "exp_5*10+3*16.7_company_esg_score": _paper(
        **_MANDATE,
        description="ESG disclosure mandate, profit-only investors (Fig. 3)",
        source="config/domain/exp_5*10+3*16.7_company_esg_score.yaml",
    ),
    **{
        f"exp_a{i}": _paper(
            **_MANDATE,
            esg_preference=alpha,
            description=f"mandate, ESG-conscious investors alpha = {alpha:g} (Fig. 3)",
            source=f"config/domain/exp_a{i}.yaml",
        )
        for i, alpha in enumerate((0.5, 1.0, 10.0, 100.0), start=1)
    },
    "exp_b1": _paper(
        **_MANDATE,
        esg_preference=(0.0, 10.0, 10.0),
        description="heterogeneous investors alpha = (0, 10, 10) (Fig. 4)",
        source="config/domain/exp_b1.yaml",
    ),
    "exp_b2": _paper(
        **_MANDATE,
        esg_preference=(0.0, 100.0, 100.0),
        description="heterogeneous investors alpha = (0, 100, 100)",
        source="config/domain/exp_b2.yaml",
    ),
    "exp_c1": _paper(
        **_MANDATE, climate_observable=True, description="mandate + climate information, alpha = 0 (Fig. 6a)", source="config/domain/exp_c1.yaml"
    ),
    "exp_d1": _paper(
        **_MANDATE,
        climate_observable=True,
        esg_preference=1.0,
        description="mandate + climate information, alpha = 1 (Fig. 6a)",
        source="config/domain/exp_d1.yaml",
    ),
    "exp_5*10": _market(5, 10.0, 3, 0.0, **_MANDATE, description="no investors (capital 0), mandate (Fig. 6b)", source="config/domain/exp_5*10.yaml"),
    "exp_5*10_with_climate": _market(
        5,
        10.0,
        3,
        0.0,
        **_MANDATE,
        climate_observable=True,
        description="no investors, mandate + climate information (Fig. 6b)",
        source="config/domain/exp_5*10_with_climate.yaml",
    ),
    **{
        f"exp_e1_{i}{suffix}": _paper(
            **_MANDATE,
            allow_greenwash=True,
            greenwash_coef=beta,
            esg_preference=10.0,
            company_learning_starts=20_000 if (suffix or i == 1) else 0,
            description=f"greenwashing allowed, beta = {beta:g}, alpha = 10 (Fig. 5b)"
            + (", companies learn after 20k env steps" if (suffix or i == 1) else ""),
            source=f"config/domain/exp_e1_{i}{suffix}.yaml",
        )
        for i, beta in enumerate((2.0, 10.0, 20.0), start=1)
        for suffix in ("", "_with_memory")
    },
    "exp_e2": _paper(
        **_MANDATE,
        allow_greenwash=True,
        greenwash_coef=20.0,
        esg_preference=(0.0, 1.0, 10.0),
        hardcoded_company_actions=((0.01, 0.0, 0.0), (0.0, 0.01, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)),
        description="hard-coded companies (one mitigates 1 %, one greenwashes 1 %), investors alpha = 0/1/10 learn (Fig. 5a)",
        source="config/domain/exp_e2.yaml",
    ),
    "exp_e3": _paper(
        **_MANDATE,
        allow_resilience=True,
        esg_preference=1.0,
        description="resilience spending allowed, alpha = 1 (Fig. 8a-c)",
        source="config/domain/exp_e3.yaml",
    ),
    "exp_3*17+3*17": _market(3, 17.0, 3, 17.0, description="market size variant", source="config/domain/exp_3*17+3*17.yaml"),
    "exp_4*12.5+4*12.5": _market(4, 12.5, 4, 12.5, description="market size variant", source="config/domain/exp_4*12.5+4*12.5.yaml"),
    "exp_5*10+5*10": _market(5, 10.0, 5, 10.0, description="market size variant", source="config/domain/exp_5*10+5*10.yaml"),
    "exp_6*8.35+4*12.5": _market(6, 8.35, 4, 12.5, description="market size variant", source="config/domain/exp_6*8.35+4*12.5.yaml"),
    "exp_8*6.25+4*12.5": _market(8, 6.25, 4, 12.5, description="market size variant", source="config/domain/exp_8*6.25+4*12.5.yaml"),
    "exp_10*5+4*12.5": _market(10, 5.0, 4, 12.5, description="market size variant", source="config/domain/exp_10*5+4*12.5.yaml"),
    "authors_jax_readme": _market(
        3,
        16.7,
        5,
        10.0,
        **_MANDATE,
        esg_preference=100.0,
        description="the original README's JAX example: 3 companies, 5 investors alpha = 100, mandate",
        source="config/domain/exp_default.yaml",
    ),
    "scale_10x10": _market(
        10,
        5.0,
        10,
        5.0,
        investment_rounding="exact",
        description="10 companies x 10 investors, 50 + 50 capital, exact investment split (Fig. 7; no original file)",
    ),
    "scale_25x25": _market(
        25,
        2.0,
        25,
        2.0,
        investment_rounding="exact",
        description="25 companies x 25 investors, 50 + 50 capital, exact investment split (Fig. 7; no original file)",
    ),
}

#: Readable names for the paper's experiments.
ALIASES: dict[str, str] = {
    "status_quo": "exp_default",
    "mandate": "exp_5*10+3*16.7_company_esg_score",
    "esg_alpha0.5": "exp_a1",
    "esg_alpha1": "exp_a2",
    "esg_alpha10": "exp_a3",
    "esg_alpha100": "exp_a4",
    "heterogeneous_alpha10": "exp_b1",
    "heterogeneous_alpha100": "exp_b2",
    "climate_info": "exp_c1",
    "climate_info_alpha1": "exp_d1",
    "no_investors": "exp_5*10",
    "no_investors_climate_info": "exp_5*10_with_climate",
    "greenwash_beta2": "exp_e1_1",
    "greenwash_beta10": "exp_e1_2",
    "greenwash_beta20": "exp_e1_3",
    "greenwash_hardcoded": "exp_e2",
    "resilience": "exp_e3",
}


def market_config(config: str | MarketConfig | Mapping[str, Any]) -> MarketConfig:
    """A :class:`MarketConfig` from a name in :data:`CONFIGS` or :data:`ALIASES`, a
    ``MarketConfig``, or a mapping of its fields."""
    if isinstance(config, MarketConfig):
        return config
    if isinstance(config, Mapping):
        settings = dict(config)
        if "company_capital" not in settings or "investor_capital" not in settings:
            raise ValueError(f"InvestESG config: a market needs company_capital and investor_capital, got {sorted(settings)}")
        return MarketConfig.create(settings.pop("company_capital"), settings.pop("investor_capital"), **settings)
    if not isinstance(config, str) or (config not in CONFIGS and config not in ALIASES):
        raise ValueError(f"InvestESG.config must be one of {sorted(CONFIGS)} or an alias {sorted(ALIASES)}, got {config!r}")
    return CONFIGS[ALIASES.get(config, config)]
