"""RICE-N dynamics: state and the activity step as small pure functions (docs/rice_n.md §3, §6).

Every function is vectorised over the region axis (and, for trade, over the importer ×
exporter matrix ``X[i, j]`` = flow from exporter j to importer i): no Python loop over
regions or partners. Equations cite the paper (arXiv 2208.07004, Appendix A/B/I) and the section
of docs/rice_n.md that states how the original code implements them; where the two differ the code is
followed (docs/rice_n.md §13).

Time: ``t`` is the 1-based activity-step counter *inside* the step (t = 1 for 2015→2020).

The climate (steps H–I) is a climate module (:mod:`jaxclimate.climate.modules`):
:class:`DiceClimate`, the reference's DICE-2016 boxes, unless the environment is built with
another (:mod:`jaxclimate.envs.rice_n.climate`; docs/climate_modules.md).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.core import struct
from jaxclimate.core.env import EnvState
from jaxclimate.core.precision import PHYSICS_PRECISION
from jaxclimate.envs.rice_n.params import NUM_LEVELS, START_YEAR, YEARS_PER_STEP, RiceParams

Array = jax.Array


# --- the climate: DICE-2016 boxes as a climate module (steps B, H–I; Eqs. 5, 10, 34) -----------


@struct.dataclass
class DiceClimateState:
    """The DICE-2016 boxes after activity step ``step``: ``temperature`` (T_AT, T_LO) °C above
    pre-industrial, ``carbon_mass`` (M_AT, M_UP, M_LO) GtC, ``forcing_exogenous`` F_EX(t) of
    the last step (W m⁻², the reference's "global_exogenous_emissions")."""

    temperature: Array
    carbon_mass: Array
    forcing_exogenous: Array
    step: Array  # int32, t of the last activity step (0 at reset)


class DiceClimate:
    """RICE-N's own climate, the reference's DICE-2016 two-box model, as a climate module
    (:class:`jaxclimate.climate.modules.ClimateModule`) of 5-year steps from 2015; every
    coefficient is a leaf of :class:`RiceParams`. One step, with t = step + 1:

        F_EX(t) = f0 + min(f1 − f0, (f1 − f0)/t_f·(t − 1))                         (Eq. 34's F_EX)
        T' = Φ_T·T + B_T·(F_2x·log2(M_AT/M_AT,1750) + F_EX(t))   previous M_AT  (Eq. 34)
        M' = Φ_M·M + B_M·Σ E,  E in GtCO2/yr, B_M[0] = Δ/3.666                   (Eq. 5)

    and the temperature is T'_AT. This step's emissions reach the temperature one step later
    (docs/rice_n.md §6 H–I)."""

    years_per_step = YEARS_PER_STEP
    start_year = START_YEAR

    def init(self, params: RiceParams) -> DiceClimateState:
        dtype = jnp.asarray(params.T_0).dtype
        return DiceClimateState(
            temperature=jnp.asarray(params.T_0),
            carbon_mass=jnp.asarray(params.M_0, dtype),
            forcing_exogenous=jnp.zeros((), dtype),
            step=jnp.zeros((), jnp.int32),
        )

    def initial_temperature(self, params: RiceParams) -> Array:
        return jnp.asarray(params.T_0)[0]

    def step(self, state: DiceClimateState, emissions: Array, params: RiceParams) -> tuple[DiceClimateState, Array]:
        t = state.step + 1
        f_ex = exogenous_forcing(t.astype(state.temperature.dtype), params)
        temperature = temperature_step(state.temperature, state.carbon_mass[0], f_ex, params)
        total = (emissions[..., 0] + emissions[..., 1]).sum()  # Σ over regions of E_i (industrial + land)
        carbon = carbon_step(state.carbon_mass, total, params)
        return DiceClimateState(temperature=temperature, carbon_mass=carbon, forcing_exogenous=f_ex, step=t), temperature[0]


DICE = DiceClimate()


@struct.dataclass
class RiceState(EnvState):
    """The full RICE-N state (docs/rice_n.md §3). ``time`` is the env-step counter k; ``activity_step``
    is t. Per-region arrays are (N,), matrices (N, N) with the acting region on rows.

    Dynamic state: ``climate`` (the climate module's state; :class:`DiceClimateState` by
    default), ``capital``, ``labor``, ``tfp``, ``intensity``, ``balance`` and ``tariffs`` (τ'
    chosen at the last activity step; applied at the next). ``temperature`` (T_AT, T_LO),
    ``carbon_mass`` (M_AT, M_UP, M_LO) and ``forcing_exogenous`` read the climate state (what
    the observation shows; docs/climate_modules.md for the other modules). The other fields
    are the last activity step's outputs, carried for the observation, and ``negotiation``, the
    protocol's own state (``()`` without negotiation).
    """

    activity_step: Array
    climate: Any
    land_emissions: Array  # E_L(t) per region, GtCO2/yr
    capital: Array
    labor: Array
    tfp: Array
    intensity: Array
    balance: Array
    tariffs: Array
    savings: Array
    mitigation: Array
    export_limit: Array
    mitigation_cost: Array
    damages: Array  # Ω, the retained output fraction (same for every region)
    abatement_cost: Array
    production: Array
    gross_output: Array  # net output Y = Ω(1 − Λ)P (the reference's name)
    investment: Array
    consumption: Array
    utility: Array
    social_welfare: Array
    reward: Array
    capital_depreciation: Array
    desired_imports: Array
    scaled_imports: Array
    tariffed_imports: Array
    tariff_revenue: Array
    negotiation: Any  # the negotiation protocol's own state (jaxclimate.envs.rice_n.protocol)

    @property
    def temperature(self) -> Array:
        """(T_AT, T_LO), °C above pre-industrial; T_AT drives the damages."""
        return self.climate.temperature

    @property
    def carbon_mass(self) -> Array:
        """(M_AT, M_UP, M_LO), GtC."""
        return self.climate.carbon_mass

    @property
    def forcing_exogenous(self) -> Array:
        """F_EX(t), W m⁻² (the reference's "global_exogenous_emissions")."""
        return self.climate.forcing_exogenous


def initial_state(params: RiceParams, dtype: Any, climate: Any = DICE, negotiation: Any = ()) -> RiceState:
    """The reset state (docs/rice_n.md §3): the climate module's initial state (T₀, M₀ for
    DICE-2016), K₀, L₀, A₀, σ₀; everything else 0; ``negotiation`` the protocol's initial state."""
    n = params.num_regions
    zeros = jnp.zeros((n,), dtype)
    square = jnp.zeros((n, n), dtype)
    return RiceState(
        time=jnp.zeros((), jnp.int32),
        activity_step=jnp.zeros((), jnp.int32),
        climate=climate.init(struct.cast_numeric(params, dtype)),
        land_emissions=jnp.zeros((), dtype),
        capital=jnp.asarray(params.K_0, dtype),
        labor=jnp.asarray(params.L_0, dtype),
        tfp=jnp.asarray(params.A_0, dtype),
        intensity=jnp.asarray(params.sigma_0, dtype),
        balance=zeros,
        tariffs=square,
        savings=zeros,
        mitigation=zeros,
        export_limit=zeros,
        mitigation_cost=zeros,
        damages=zeros,
        abatement_cost=zeros,
        production=zeros,
        gross_output=zeros,
        investment=zeros,
        consumption=zeros,
        utility=zeros,
        social_welfare=zeros,
        reward=zeros,
        capital_depreciation=zeros,
        desired_imports=square,
        scaled_imports=square,
        tariffed_imports=square,
        tariff_revenue=zeros,
        negotiation=negotiation,
    )


# --- exogenous terms (step B) ------------------------------------------------------------------


def exogenous_forcing(t: Array, p: RiceParams) -> Array:
    """F_EX(t) = f0 + min(f1 − f0, (f1 − f0)/t_f·(t − 1))  (Eq. 34's exogenous term; docs/rice_n.md §6 B)."""
    return p.f0 + jnp.minimum(p.f1 - p.f0, (p.f1 - p.f0) / p.t_f * (t - 1))


def land_emissions(t: Array, p: RiceParams, num_regions: int) -> Array:
    """E_L(t) = E_L0·(1 − δ_EL)^(t−1) / N per region  (Eq. 20 as coded; docs/rice_n.md §13 row 8)."""
    return p.E_L0 * (1.0 - p.delta_EL) ** (t - 1) / num_regions


# --- production and output (step C) ------------------------------------------------------------


def power(x: Array, y: Array) -> Array:
    """x^y for x ≥ 0 and y ≥ 0 as exp(y·log x) (0^y = 0 for y > 0, 1 for y = 0).

    XLA:CPU lowers a general ``pow`` (signs, integer exponents, ...) to a scalar library call
    per element; its exp and log are vectorised, so this is several times faster on the
    step's (N,) powers. The two agree to a few ulps (|y·log x| ulps of exp's error). At
    x = 0 the log is taken of the smallest normal number instead, and the result then set to
    0^y: the same values, and a zero gradient there instead of 0·∞ = NaN (the planner
    differentiates through economies without trade). Not ``where(x > 0, x, 1)``: XLA may
    compute x twice, in two fusions that contract a product and a sum into an FMA
    differently, and a residue (domestic consumption of an export-saturated region) that is 0
    in one and 1e-17 in the other would then give 1 instead of ~0."""
    powered = jnp.exp(y * jnp.log(jnp.maximum(x, jnp.finfo(jnp.result_type(x)).tiny)))
    return jnp.where(x > 0, powered, jnp.where(y == 0, 1.0, 0.0).astype(powered.dtype))


def _positive_power(x: Array, y: Array) -> Array:
    """x^y for x > 0 (any y) as exp(y·log x): :func:`power` where the base is never 0."""
    return jnp.exp(y * jnp.log(x))


def mitigation_cost(t: Array, intensity: Array, p: RiceParams) -> Array:
    """θ1 = p_b/(1000·θ2)·(1 − δ_pb)^(t−1)·σ  (Eq. 37)."""
    return p.p_b / (p.mitigation_cost_scale * p.theta_2) * (1.0 - p.delta_pb) ** (t - 1) * intensity


def damage_retention(temperature_at: Array, p: RiceParams) -> Array:
    """Ω = 1/(1 + a1·T_AT + a2·T_AT^a3) at the previous T_AT (docs/rice_n.md §13 row 4)."""
    return 1.0 / (1.0 + p.a1 * temperature_at + p.a2 * jnp.power(temperature_at, p.a3))


def production(tfp: Array, capital: Array, labor: Array, p: RiceParams) -> Array:
    """P = A·K^γ·(L/1000)^(1−γ)  (Eq. 40 with L in billions; docs/rice_n.md §13 row 2)."""
    return tfp * _positive_power(capital, p.gamma) * _positive_power(labor / p.labor_scale, 1.0 - p.gamma)


# --- trade (steps D–G; Appendix I, Eqs. 52–57) ---------------------------------------------------


def debt_ratio(balance_after_interest: Array, p: RiceParams) -> Array:
    """d = clip(10·B̃/K₀, −1, 0) (HEAD, Eq. 53) or clip(B̃/10·K₀, −1, 0) (``"2022"``)."""
    if p.debt_ratio_formula == "2022":
        ratio = balance_after_interest / p.debt_ratio_multiplier * p.K_0
    else:
        ratio = p.debt_ratio_multiplier * balance_after_interest / p.K_0
    return jnp.clip(ratio, -1.0, 0.0)


def _matvec(matrix: Array, vector: Array) -> Array:
    """matrix @ vector at full float32 precision on every backend (jaxclimate.core.precision)."""
    return jnp.matmul(matrix, vector, precision=PHYSICS_PRECISION)


def _ratio_where(condition: Array, numerator: Array, denominator: Array) -> Array:
    """numerator/denominator where ``condition``, 1 elsewhere; the denominator is replaced by 1
    where the ratio is not taken, so that branch cannot produce NaN (``where`` evaluates both)."""
    return jnp.where(condition, numerator / jnp.where(condition, denominator, 1.0), 1.0)


@struct.dataclass
class TradeFlows:
    """An importer × exporter matrix in factored form, X[i, j] = a_i·B[i, j]·c_j.

    Every scaling of the trade block (Eqs. 52–56) multiplies a whole row (the importer's
    budget and debt) or a whole column (the exporter's cap), so the realised imports are the
    bids rescaled on both sides: ``importer`` a (N,), ``weights`` B (N, N) with a zero diagonal,
    ``exporter`` c (N,). Sums over rows or columns are then matrix–vector products (N² work,
    nothing N×N written); ``matrix`` builds X where it is wanted (records, tests), and
    ``np.asarray`` of a :class:`TradeFlows` gives it too. ``exports``, where given, are the
    column sums known exactly (the realised flows': the export cap where it binds)."""

    importer: Array
    weights: Array
    exporter: Array
    exports: Any = None

    @property
    def matrix(self) -> Array:
        """X[i, j] = a_i·B[i, j]·c_j."""
        return self.importer[..., :, None] * self.weights * self.exporter[..., None, :]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self.matrix, dtype)

    def row_sums(self) -> Array:
        """Σ_j X[i, j]: each importer's imports."""
        return self.importer * _matvec(self.weights, self.exporter)

    def column_sums(self) -> Array:
        """Σ_i X[i, j]: each exporter's exports."""
        return _matvec(self.importer, self.weights) * self.exporter if self.exports is None else self.exports

    def times(self, matrix: Array) -> TradeFlows:
        """X ∘ M (elementwise), in factored form."""
        return TradeFlows(importer=self.importer, weights=self.weights * matrix, exporter=self.exporter)


def trade_flows(bids: Array, output: Array, investment: Array, export_limit: Array, balance_after_interest: Array, p: RiceParams) -> TradeFlows:
    """Realised imports X[i, j] from exporter j to importer i (docs/rice_n.md §6 D–E, §6.1), in
    factored form (:class:`TradeFlows`, ``.matrix`` is X):

    bids b[i, j]·Y_i (no self-trade), rows scaled to Σ_j X_ij ≤ Y_i (Eq. 52, strict >), rows
    × (1 + d_i) (Eqs. 53–54), columns scaled to the export cap min(x̄_j·Y_j, Y_j − I_j)
    (Eqs. 55–56). So X = diag(a)·b·diag(c) with a_i = Y_i·min(1, Y_i/(Y_i·Σ_j b_ij))·(1 + d_i)
    (the budget's scale where the bids exceed it) and c_j the cap's scale of exporter j; the
    exports Σ_i X_ij are min(demand_j, cap_j) (the reference sums the scaled column: the cap
    to rounding, so an export-saturated region's domestic consumption Y − I − exports is 0
    here and a ±1e-16·Y residue there; docs/rice_n.md §15)."""
    n = output.shape[-1]
    weights = bids * (1.0 - jnp.eye(n, dtype=bids.dtype))
    requested = output * weights.sum(axis=1)
    importer = output * _ratio_where(requested > output, output, requested) * (1.0 + debt_ratio(balance_after_interest, p))
    cap = jnp.minimum(export_limit * output, output - investment)
    demand = _matvec(importer, weights)
    over = demand > cap
    return TradeFlows(importer=importer, weights=weights, exporter=_ratio_where(over, cap, demand), exports=jnp.where(over, cap, demand))


def armington_consumption(domestic: Array, tariffed_imports: Array | TradeFlows, p: RiceParams) -> Array:
    """C_i = (ψ_dom·c_i^λ + Σ_j ψ_for·X̂_ij^λ)^(1/λ), ψ_for = 0.5/(N − 1)  (Eqs. 3, 25; docs/rice_n.md §6 F).

    ``tariffed_imports`` X̂ is an (N, N) array or a :class:`TradeFlows`; factored, the sum is
    Σ_j X̂_ij^λ = a_i^λ·Σ_j B_ij^λ·c_j^λ, a matrix–vector product. Powers are :func:`power`,
    exp(λ·log x) (X̂ ≥ 0, λ > 0; zero where the base is 0, with a zero gradient there instead
    of 0·∞ = NaN: gradients through an economy without trade, the planner's), and the N×N
    powers are the step's largest cost: square roots where λ = ½ (the reference's value;
    correctly rounded, as NumPy's x**0.5), chosen at run time by a ``cond`` so λ stays a
    parameter (``vmap``ped over λ, both branches run and each entry takes its own)."""
    n = domestic.shape[-1]
    lam = p.armington_sub_rate
    if isinstance(tariffed_imports, TradeFlows):
        weights = _powers(tariffed_imports.weights, lam)
        powered = power(tariffed_imports.importer, lam) * _matvec(weights, power(tariffed_imports.exporter, lam))
    else:
        powered = _powers(tariffed_imports, lam).sum(axis=1)
    foreign = p.armington_for_total / (n - 1) * powered
    return power(p.armington_dom_pref * power(domestic, lam) + foreign, 1.0 / lam)


def _powers(x: Array, lam: Array) -> Array:
    """x^λ of a non-negative (N, N) block: :func:`power`, by square roots where λ = ½."""

    def half(x):  # the gradient at 0 is 0 as power's (and a finite 0·1/(2·sqrt(tiny)) in float32)
        return jnp.where(x > 0, jnp.sqrt(jnp.maximum(x, jnp.finfo(x.dtype).tiny)), 0.0)

    return jax.lax.cond(lam == 0.5, half, lambda x: power(x, lam), x)


def utility(consumption: Array, labor: Array, p: RiceParams) -> Array:
    """U = ℓ·((C/ℓ + offset)^(1−α) − 1)/(1 − α), ℓ = L/1000  (Eq. 2 as coded; docs/rice_n.md §13 row 10)."""
    ell = labor / p.labor_scale
    return ell * (_positive_power(consumption / ell + p.utility_offset, 1.0 - p.alpha) - 1.0) / (1.0 - p.alpha)


# --- climate (steps H–I; Eqs. 5, 10, 34–35) ----------------------------------------------------


def temperature_step(temperature: Array, carbon_at: Array, forcing_exogenous: Array, p: RiceParams) -> Array:
    """T' = Φ_T·T + B_T·(F_2x·log2(M_AT/M_AT,1750) + F_EX) with the previous M_AT (Eq. 34)."""
    forcing = p.F_2x * jnp.log(carbon_at / p.M_AT_1750) / jnp.log(2.0) + forcing_exogenous
    return p.Phi_T @ temperature + p.B_T * forcing


def industrial_emissions(intensity: Array, mitigation: Array, gross_production: Array) -> Array:
    """σ·(1 − μ)·P with gross production and the previous σ (Eq. 35 as coded; docs/rice_n.md §13 row 7)."""
    return intensity * (1.0 - mitigation) * gross_production


def carbon_step(carbon_mass: Array, total_emissions: Array, p: RiceParams) -> Array:
    """M' = Φ_M·M + B_M·Σ_i E_i  (Eq. 5)."""
    return p.Phi_M @ carbon_mass + p.B_M * total_emissions


# --- slow variables (step J; Eqs. 36, 38, 39, 41) ---------------------------------------------


def capital_retention(p: RiceParams) -> Array:
    """(1 − δ_K)^Δ = 0.59049."""
    return (1.0 - p.delta_K) ** p.Delta


def labor_step(labor: Array, p: RiceParams) -> Array:
    """L' = L·((1 + L_a)/(1 + L))^l_g  (Eq. 38)."""
    return labor * _positive_power((1.0 + p.L_a) / (1.0 + labor), p.l_g)


def tfp_step(tfp: Array, t: Array, p: RiceParams) -> Array:
    """A' = A·(e^η + g_A·e^(−δ_A·Δ·(t−1))), η = 0.0033 per step  (Eq. 39)."""
    return tfp * (jnp.exp(p.tfp_eta) + p.g_A * jnp.exp(-p.delta_A * p.Delta * (t - 1)))


def intensity_step(intensity: Array, t: Array, p: RiceParams) -> Array:
    """σ' = σ·exp(−g_σ·(1 − δ_σ)^(Δ(t−1))·Δ)  (Eqs. 22, 41)."""
    return intensity * jnp.exp(-p.g_sigma * (1.0 - p.delta_sigma) ** (p.Delta * (t - 1)) * p.Delta)


# --- the activity step ----------------------------------------------------------------------------


def decode_activity(levels: Array, num_regions: int, dtype: Any) -> dict[str, Array]:
    """Action levels (N, ≥ 3 + 2N) -> rates = level/10 (docs/rice_n.md §5.1). Tariffs come first
    ([3, 3+N)), import bids second ([3+N, 3+2N)); the self-bid is zeroed in the trade block.

    The per-region rates (savings, mitigation, export limit) come out as the rows of a
    contiguous (3, N) array, the product of the identity and the transposed columns (exact:
    x·1 + 0 + 0). As columns of the (N, A) levels they are strided, and XLA fuses the
    decoding into each consumer: the loops that compute the step's powers from them were then
    not vectorised (about 1.5 µs of a 20-region env step on a CPU core); a product's output
    is written once, contiguously."""
    n = num_regions
    rates = levels[:, : 3 + 2 * n].astype(dtype) / NUM_LEVELS
    heads = jnp.matmul(jnp.eye(3, dtype=dtype), rates[:, :3].T, precision=PHYSICS_PRECISION)
    return {
        "savings": heads[0],
        "mitigation": heads[1],
        "export_limit": heads[2],
        "tariffs": rates[:, 3 : 3 + n],
        "bids": rates[:, 3 + n : 3 + 2 * n],
    }


def activity_step(state: RiceState, rates: dict[str, Array], p: RiceParams, climate: Any = DICE) -> RiceState:
    """One 5-year activity step in the reference's order (docs/rice_n.md §6 A–K); ``rates`` as from
    :func:`decode_activity` (after the protocol's enforced floors); ``climate`` the climate module
    (steps H–I; the DICE-2016 boxes by default). Advances ``activity_step``, not ``time``."""
    n = state.capital.shape[-1]
    t = state.activity_step + 1
    tf = t.astype(state.capital.dtype)
    s, mu = rates["savings"], rates["mitigation"]

    # B: exogenous terms (F_EX is the DICE climate module's)
    e_land = land_emissions(tf, p, n)
    # C: production and output (previous T, K, L, A, σ)
    theta1 = mitigation_cost(tf, state.intensity, p)
    omega = damage_retention(state.temperature[0], p)
    abatement = theta1 * power(mu, p.theta_2)
    gross = production(state.tfp, state.capital, state.labor, p)
    output = omega * (1.0 - abatement) * gross
    balance = state.balance * (1.0 + p.balance_interest_rate)
    investment = s * output
    # D–E: trade, X = diag(a)·b·diag(c) in factored form
    x = trade_flows(rates["bids"], output, investment, rates["export_limit"], balance, p)
    # F: tariffs (the previous step's), consumption, utility
    x_hat = x.times(1.0 - state.tariffs)
    exports = x.column_sums()
    imports = x.row_sums()
    domestic = jnp.maximum(0.0, output - investment - exports)
    consumption = armington_consumption(domestic, x_hat, p)
    u = utility(consumption, state.labor, p)
    # G: trade balance (Eq. 57)
    balance = balance + p.Delta * (exports - imports)
    # H–I: climate, from this step's emissions per region (GtCO2/yr: industrial, land). DICE
    # uses the previous M_AT and T, so these emissions act one step later.
    industrial = industrial_emissions(state.intensity, mu, gross)
    emissions = jnp.stack([industrial, jnp.broadcast_to(e_land, industrial.shape)], axis=-1)
    climate_state, _ = climate.step(state.climate, emissions, p)
    # J: slow variables
    retention = capital_retention(p)
    return state.replace(
        activity_step=t,
        climate=climate_state,
        land_emissions=e_land,
        capital=retention * state.capital + p.Delta * investment,
        labor=labor_step(state.labor, p),
        tfp=tfp_step(state.tfp, tf, p),
        intensity=intensity_step(state.intensity, tf, p),
        balance=balance,
        tariffs=rates["tariffs"],  # K: act at the next activity step
        savings=s,
        mitigation=mu,
        export_limit=rates["export_limit"],
        mitigation_cost=theta1,
        damages=jnp.broadcast_to(omega, (n,)),
        abatement_cost=abatement,
        production=gross,
        gross_output=output,
        investment=investment,
        consumption=consumption,
        utility=u,
        social_welfare=u / (1.0 + p.rho) ** (p.Delta * tf),
        reward=u,
        capital_depreciation=jnp.broadcast_to(retention, (n,)).astype(state.capital.dtype),
        desired_imports=rates["bids"],
        scaled_imports=x.matrix,
        tariffed_imports=x_hat.matrix,
        tariff_revenue=x.times(state.tariffs).row_sums(),
    )
