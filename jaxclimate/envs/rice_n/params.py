"""RICE-N parameters: the 27 regions' data and every constant as a pytree leaf (docs/rice_n.md §4).

The values ship in ``data/ricen_params.json`` (generated from the reference's region YAML
files, which ship beside it; see ``data/PROVENANCE.md``). :func:`rice_params` builds a
:class:`RiceParams` for all 27 regions or any subset; every number is a leaf, so a sweep over,
e.g., the damage coefficient ``a2`` or the ``utility_offset`` is one ``vmap`` and one compile.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any, Sequence

import numpy as np

from jaxclimate.core import struct
from jaxclimate.core.env import EnvParams

NUM_REGIONS = 27
NUM_LEVELS = 10  # action value = level / 10 (docs/rice_n.md §5)
START_YEAR = 2015
YEARS_PER_STEP = 5  # Δ of an activity step
#: Per-region inputs that differ between regions (docs/rice_n.md §4.4).
REGIONAL_KEYS = ("A_0", "K_0", "L_0", "L_a", "l_g", "g_A", "delta_A", "sigma_0")
#: Φ_M's spectral radius may exceed 1 by this much (the reference's columns sum to 1 within float rounding).
CARBON_RADIUS_TOLERANCE = 1e-6
DEBT_RATIO_FORMULAS = ("head", "2022")


@functools.lru_cache(maxsize=1)
def load_data() -> dict:
    """The parsed ``ricen_params.json`` (see ``data/PROVENANCE.md``)."""
    text = resources.files("jaxclimate.envs.rice_n").joinpath("data/ricen_params.json").read_text()
    return json.loads(text)


@functools.lru_cache(maxsize=1)
def index_constants() -> dict[str, float]:
    """The evaluation's normalisation constants ``min_ci, max_ci, min_ei, max_ei`` (docs/rice_n.md §11.2),
    read from the reference's own file."""
    text = resources.files("jaxclimate.envs.rice_n").joinpath("data/climate_economic_min_max_indices.txt").read_text()
    return {k: float(v) for k, v in json.loads(text).items()}


def region_names() -> list[str]:
    """Region file names in index order (``"11"``, ``"12"``, …, ``"9"``); index + 1 is the
    paper's Table 1 region ID."""
    return [name.removesuffix(".yml") for name in load_data()["region_order"]["index_to_yaml"]]


#: What a region subset may be, for error messages.
REGIONS_FORMS = f"a list of at least 2 distinct region indices 0..{NUM_REGIONS - 1}, e.g. [0,5,12,20] or 0,5,12,20"


def parse_regions(regions: Any) -> Any:
    """A comma-separated string of region indices (``"0,5,12,20"``, as ``--env-set
    regions=0,5,12,20`` passes it; ``"[0, 5, 12, 20]"`` too) -> a list of ints; anything else
    as it is. A string that is not such a list is refused, naming the accepted forms."""
    if not isinstance(regions, str):
        return regions
    text = regions.strip()
    if len(text) >= 2 and text[0] + text[-1] in ("[]", "()"):
        text = text[1:-1]
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"rice-n regions must be {REGIONS_FORMS}; got {regions!r}") from None


def check_regions(regions: Sequence[int] | str | None) -> np.ndarray:
    """Validate a region subset (indices 0..26, distinct, at least 2; a list, tuple, array or
    comma-separated string, :func:`parse_regions`) -> int array."""
    if regions is None:
        return np.arange(NUM_REGIONS)
    regions = parse_regions(regions)
    try:
        ids = np.asarray(list(regions))
    except TypeError:
        raise ValueError(f"rice-n regions must be {REGIONS_FORMS}; got {regions!r}") from None
    if ids.ndim != 1 or ids.size < 2 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"rice-n regions must be {REGIONS_FORMS}; got {regions!r}")
    unknown = [int(i) for i in ids if not 0 <= i < NUM_REGIONS]
    if unknown:
        raise ValueError(
            f"rice-n regions: unknown region ids {unknown}; valid ids are 0..{NUM_REGIONS - 1} (paper Table 1 ID − 1), e.g. [0,5,12,20] or 0,5,12,20"
        )
    if len(set(ids.tolist())) != ids.size:
        raise ValueError(f"rice-n regions must be distinct, got {ids.tolist()}")
    return ids.astype(np.int64)


@struct.dataclass
class RiceParams(EnvParams):
    """Every RICE-N number (docs/rice_n.md §4). Per-region arrays (N,) follow the region subset's order.

    Flags for the reference's defects (docs/rice_n.md §14.1), all defaulting to the reference:

    * ``debt_ratio_formula`` (static): ``"head"`` d = clip(10·B̃/K₀, −1, 0) (paper Eq. 53) or
      ``"2022"`` d = clip(B̃/10·K₀, −1, 0) (competition-era code);
    * ``utility_offset``: the "+1" inside the utility (1.0 in the reference);
    * ``enforce_minimum_mitigation``: ``False`` — the bilateral protocol's negotiated minimum
      mitigation is only an action mask, as in the reference; ``True`` clamps μ ← max(μ, m) in
      the activity step.

    ``negotiation``: the negotiation protocol's own parameters (``Protocol.default_params()``,
    ``None`` for the built-ins; set by the environment), a pytree like every other value here.
    """

    # per region (docs/rice_n.md §4.4)
    A_0: Any = None
    K_0: Any = None
    L_0: Any = None
    L_a: Any = None
    l_g: Any = None
    g_A: Any = None
    delta_A: Any = None
    sigma_0: Any = None
    # economy (docs/rice_n.md §4.2)
    gamma: Any = 0.3
    theta_2: Any = 2.6
    a1: Any = 0.0
    a2: Any = 0.00236
    a3: Any = 2.0
    delta_K: Any = 0.1
    alpha: Any = 1.45
    rho: Any = 0.015
    g_sigma: Any = 0.0025
    delta_sigma: Any = 0.1
    p_b: Any = 550.0
    delta_pb: Any = 0.001
    # climate (docs/rice_n.md §4.1)
    Delta: Any = 5.0
    Phi_T: Any = struct.field(default_factory=lambda: np.array([[0.8718, 0.0088], [0.025, 0.975]]))
    B_T: Any = struct.field(default_factory=lambda: np.array([0.1005, 0.0]))
    Phi_M: Any = struct.field(default_factory=lambda: np.array([[0.88, 0.196, 0.0], [0.12, 0.797, 0.001465], [0.0, 0.007, 0.99853488]]))
    B_M: Any = struct.field(default_factory=lambda: np.array([1.36388, 0.0, 0.0]))
    M_AT_1750: Any = 588.0
    f0: Any = 0.5
    f1: Any = 1.0
    t_f: Any = 20.0
    E_L0: Any = 2.6
    delta_EL: Any = 0.001
    F_2x: Any = 3.6813
    T_0: Any = struct.field(default_factory=lambda: np.array([0.85, 0.0068]))
    M_0: Any = struct.field(default_factory=lambda: np.array([851.0, 460.0, 1740.0]))
    # constants hard-coded in the reference's Python (docs/rice_n.md §4.3)
    balance_interest_rate: Any = 0.1
    debt_ratio_multiplier: Any = 10.0
    armington_sub_rate: Any = 0.5  # λ
    armington_dom_pref: Any = 0.5  # ψ_dom
    armington_for_total: Any = 0.5  # ψ_for = armington_for_total / (N − 1) per foreign region
    utility_offset: Any = 1.0
    tfp_eta: Any = 0.0033
    labor_scale: Any = 1000.0
    mitigation_cost_scale: Any = 1000.0
    enforce_minimum_mitigation: Any = False
    negotiation: Any = None
    debt_ratio_formula: str = struct.field(static=True, default="head")
    max_steps: int = 1000  # set to the protocol's episode length by the environment (episodes terminate in 2115)

    def validate(self) -> None:
        super().validate()
        name = type(self).__name__
        check = functools.partial(struct.check_range, name)
        if self.debt_ratio_formula not in DEBT_RATIO_FORMULAS:
            raise ValueError(f"{name}.debt_ratio_formula must be one of {DEBT_RATIO_FORMULAS}, got {self.debt_ratio_formula!r}")
        k0 = struct.concrete_value(self.K_0)
        if k0 is None:
            return
        n = np.shape(k0)[-1]
        for key in REGIONAL_KEYS:
            if struct.concrete_value(getattr(self, key)) is None:
                raise ValueError(f"{name}.{key} is missing: build parameters with rice_params(regions)")
            check(key, getattr(self, key), shape=(n,))
        for key in ("A_0", "K_0", "L_0", "L_a", "sigma_0"):
            check(key, getattr(self, key), low=0.0, low_inclusive=False)
        check("gamma", self.gamma, low=0.0, high=1.0, shape=())
        check("theta_2", self.theta_2, low=0.0, low_inclusive=False, shape=())
        check("a2", self.a2, low=0.0, shape=())
        check("alpha", self.alpha, low=0.0, low_inclusive=False, shape=())
        check("delta_K", self.delta_K, low=0.0, high=1.0, shape=())
        check("Delta", self.Delta, low=0.0, low_inclusive=False, shape=())
        check("Phi_T", self.Phi_T, shape=(2, 2))
        check("B_T", self.B_T, shape=(2,))
        check("Phi_M", self.Phi_M, shape=(3, 3))
        check("B_M", self.B_M, shape=(3,))
        check("T_0", self.T_0, shape=(2,))
        check("M_0", self.M_0, low=0.0, low_inclusive=False, shape=(3,))
        check("M_AT_1750", self.M_AT_1750, low=0.0, low_inclusive=False, shape=())
        check("armington_sub_rate", self.armington_sub_rate, low=0.0, high=1.0, low_inclusive=False, shape=())
        check("armington_dom_pref", self.armington_dom_pref, low=0.0, shape=())
        check("armington_for_total", self.armington_for_total, low=0.0, shape=())
        check("utility_offset", self.utility_offset, low=0.0, low_inclusive=False, shape=())
        check("balance_interest_rate", self.balance_interest_rate, low=-1.0, shape=())
        self._check_climate_maps_are_stable(name)

    def _check_climate_maps_are_stable(self, name: str) -> None:
        """The climate is two explicit linear maps (docs/rice_n.md §15.1): T' = Φ_T·T + B_T·F
        stays bounded under bounded forcing only if Φ_T's spectral radius is below 1, and
        M' = Φ_M·M + B_M·E creates no carbon only if Φ_M is non-negative with spectral radius
        at most 1 (its columns, what each reservoir keeps and passes on, sum to 1)."""
        phi_t, phi_m = struct.concrete_value(self.Phi_T), struct.concrete_value(self.Phi_M)
        if phi_t is not None:
            radius = float(np.max(np.abs(np.linalg.eigvals(phi_t))))
            if not radius < 1.0:
                raise ValueError(
                    f"{name}.Phi_T has spectral radius {radius:.4g}; temperatures T' = Phi_T·T + B_T·F grow without bound unless it is < 1 (docs/rice_n.md §15.1)"
                )
        if phi_m is not None:
            if np.any(phi_m < 0):
                raise ValueError(f"{name}.Phi_M must be non-negative (a reservoir cannot pass on a negative carbon mass), got min {phi_m.min():g}")
            radius = float(np.max(np.abs(np.linalg.eigvals(phi_m))))
            if radius > 1.0 + CARBON_RADIUS_TOLERANCE:
                raise ValueError(
                    f"{name}.Phi_M has spectral radius {radius:.6g} > 1: carbon mass would grow with no emissions (docs/rice_n.md §15.1)"
                )

    @property
    def num_regions(self) -> int:
        return int(np.shape(self.K_0)[-1])


def rice_params(regions: Sequence[int] | None = None, **overrides: Any) -> RiceParams:
    """Reference parameters for all 27 regions (``regions=None``) or a subset of region
    indices, with optional field overrides (validated)."""
    ids = check_regions(regions)
    regional = load_data()["regional"]
    values = {key: np.asarray(regional[key]["values"], np.float64)[ids] for key in REGIONAL_KEYS}
    values.update(overrides)
    return RiceParams(**values)
