"""CICERO-SCM 2.1.3 in JAX: an exact, differentiable port of the oracle's configuration.

The model of ``ciceroscm`` 2.1.3 (Apache-2.0) in the configuration of
:mod:`jaxclimate.climate.cicero` (``nystart=1900, emstart=2015, nyend=2075, idtm=24``, the
paper's thermal parameters, per-unit aerosol coefficients, default carbon-cycle parameters,
no solar or volcanic forcing), written as array code: one simulated year is

1. **CO2 carbon cycle**: 24 sub-steps; land uptake and the ocean mixed layer are
   convolutions of their whole sub-step history with the impulse responses ``rb`` and ``rs``.
   Both responses are sums of exponentials (``rs`` after a 2-year "early" form), so the
   convolutions are carried as a few exponentially decaying sums plus a 47-lag FIR on the
   recent sub-steps: ~60 state values and O(1) work per sub-step instead of a dot over the
   whole history (the same sums in another order); mixed-layer pCO2 by a 5th-order polynomial (log
   extrapolation above z = 293.5); temperature feedbacks on NPP, solubility and mixed-layer
   depth read last year's ``dT_glob``; the corrector of large pCO2 jumps as a ``where``.
2. **CH4 and N2O**: prescribed concentrations before 2015, then the analytic lifetime update
   C = P/q + (C_prev − P/q)·e^{−q} (CH4 lifetime with the TAR OH feedback and natural
   emissions).
3. **Forcing**: CO2/CH4/N2O by the coupled Etminan formulas; SO2 direct, SO4 indirect, BC,
   OC linear in the emission change since 1900 (NH/SH split 1.47/0.53); tropospheric O3
   anchored to 1900 (split 1.45/0.55); stratospheric H2O from CH4; land-use albedo (split
   1.42/0.58); the 27 halocarbons and stratospheric O3 from the SSP2-4.5 inputs, which no
   scenario changes, computed once at construction.
4. **Upwelling–diffusion ocean**: 40 layers per hemisphere, 12 sub-steps a year, the
   tridiagonal systems rebuilt every sub-step (upwelling depends on the surface
   temperature) and solved by elimination (:func:`tridiagonal_solve`); ``dT_glob_air`` is the mean
   of the sub-steps' air temperatures.

Past 2075 (the end of the shipped inputs) every year-indexed input holds its 2075 value
(:func:`_table_row`), an extension of ours for economies that run longer.

What differs from ciceroscm is only the summation order of the history convolutions
(rounding: ≤ 1e-14 K on SSP2-4.5 in float64). Everything runs under ``jit``, ``vmap`` and ``grad``.
Reference behaviour and choices: docs/climate_mitigation.md §7.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.climate import cicero
from jaxclimate.core.linalg import tridiagonal_solve
from jaxclimate.core.loops import loop_unroll
from jaxclimate.core.precision import at_physics_precision

IDTM = 24  # carbon-cycle sub-steps per year
LDTIME = 12  # ocean sub-steps per year
LAYERS = 40  # ocean layers per hemisphere
N_YEARS = cicero.N_YEARS
YEAR0 = cicero.START_YEAR
EMSTART = cicero.SCENARIO_START

# --- carbon cycle constants (ciceroscm carbon_cycle/common_carbon_cycle_functions.py) -----------
OCEAN_AREA = 3.62e14
GE_COEFF = 1.0 / (OCEAN_AREA * 9.06)
PPMKG_TO_UMOL_PER_VOL = 1.722e17
PPM_CO2_TO_PG_C = 2.123
Z_CO2_MAX = 293.5
_PCO2_POLY = (1.3021, 3.7929e-3, 9.1193e-6, 1.488e-8, 1.2425e-10)
CARBON_DEFAULTS = {
    "beta_f": 0.287,
    "mixed_carbon": 75.0,
    "ml_w_sigmoid": 3.0,
    "ml_fracmax": 0.5,
    "ml_t_half": 0.5,
    "t_half": 0.5,
    "w_sigmoid": 7.0,
    "t_threshold": 4.0,
    "w_threshold": 7.0,
    "solubility_sens": 0.02,
    "solubility_limit": 0.5,
    "ml_depth_min": 10.0,
}
# --- thermal model defaults (ciceroscm thermal_model/upwelling_diffusion_model.py) -----------
# the ocean's scalar parameters a run may override with traced values (CiceroJAX.step's ``ocean``)
OCEAN_PARAMETERS = ("lambda", "akapa", "rlamdo", "beto", "cpi", "W")
UDM_DEFAULTS = {"threstemp": 7.0, "foan": 0.61, "foas": 0.81, "ebbeta": 0.0, "ocean_efficacy": 1.0}
SEC_YEAR = 86400 * 365.0
EMICONC_DEFAULTS = {"qh2o_ch4": 0.091915, "ref_yr": 2010, "qnmvoc": 0.0, "qnh3": 0.0, "qnox": 0.0}

# Hemispheric splits of forcing (NH share; SH gets 2 − share).
AEROSOL_SPLIT, TROP_O3_SPLIT, LANDUSE_SPLIT = 1.47, 1.45, 1.42


HEAT_CAPACITY = 1.03 * 0.955 * 0.485 * 100.0 * 86400  # c₁: sea water's heat capacity per metre, in the model's units
DEEP_LAYER = 100.0  # m: every layer below the mixed one


def check_ocean_parameters(pamset_udm: dict, owner: str = "pamset_udm") -> None:
    """Refuse ocean parameters the port cannot integrate (docs/climate_mitigation.md §7.5): each
    of ``mixed`` and :data:`OCEAN_PARAMETERS` positive and finite, and the explicit part of the
    monthly ocean sub-step a non-negative combination of the old temperatures,

        β·Δt/(c₁·min Δz) + π·W·Δt/(yr·Δz₀) ≤ 1

    (interhemispheric exchange β = ``beto`` and upwelling π·W = ``cpi``·``W``; Δt a month, Δz₀
    the mixed layer ``mixed``): a discrete maximum principle, so the step neither oscillates
    nor grows. The diffusion and the climate feedback λ are implicit (a tridiagonal solve) and
    stable for any positive value."""
    p = {**UDM_DEFAULTS, **cicero.PAMSET_UDM, **pamset_udm}
    for key in (*OCEAN_PARAMETERS, "mixed"):
        value = p[key]
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"{owner}[{key!r}] must be positive and finite, got {value!r}")
    dt = SEC_YEAR / LDTIME
    explicit = p["beto"] * dt / (HEAT_CAPACITY * min(p["mixed"], DEEP_LAYER)) + p["cpi"] * p["W"] * dt / (SEC_YEAR * p["mixed"])
    if explicit > 1.0:
        raise ValueError(
            f"{owner}: beto·Δt/(c₁·min Δz) + cpi·W·Δt/(yr·mixed) = {explicit:.3g} > 1 (beto {p['beto']:g}, cpi {p['cpi']:g}, W {p['W']:g}, "
            f"mixed {p['mixed']:g}): the explicit ocean sub-step would oscillate (docs/climate_mitigation.md §7.5)"
        )


def _check_supported(pamset_udm: dict, pamset_emiconc: dict) -> None:
    """The port implements the oracle's configuration; reject what it does not implement."""
    check_ocean_parameters(pamset_udm)
    for key, value in pamset_udm.items():
        if key == "threstemp" and value == 0:
            raise ValueError("pamset_udm['threstemp'] = 0 (constant upwelling) is not implemented by the JAX port")
        if key == "ocean_efficacy" and value != 1.0:
            raise ValueError(f"pamset_udm['ocean_efficacy'] = {value} is not implemented by the JAX port (only 1.0)")
        if key == "ebbeta" and value != 0.0:
            raise ValueError(f"pamset_udm['ebbeta'] = {value} is not implemented by the JAX port (only 0.0)")
        if key in ("delta_lambda_aero", "delta_lambda_pdo", "pdo_efficacy_scale", "pdo_index_data", "lm", "ldtime"):
            raise ValueError(f"pamset_udm[{key!r}] is not implemented by the JAX port")
    known_udm = {"rlamdo", "akapa", "cpi", "W", "beto", "lambda", "mixed", *UDM_DEFAULTS}
    unknown = set(pamset_udm) - known_udm
    if unknown:
        raise ValueError(f"pamset_udm keys not implemented by the JAX port: {sorted(unknown)}")
    known_emi = {"qbmb", "qo3", "qdirso2", "qindso2", "qbc", "qoc", "qh2o_ch4"}
    unknown = set(pamset_emiconc) - known_emi
    if unknown:
        raise ValueError(f"pamset_emiconc keys not implemented by the JAX port: {sorted(unknown)}")
    for key in ("qnmvoc", "qnh3", "qnox"):
        if pamset_emiconc.get(key, 0.0) != 0.0:
            raise ValueError(f"pamset_emiconc[{key!r}] != 0 is not implemented by the JAX port")


# --- inputs, read with NumPy from the shipped files ------------------------------------------


def _read_gas_table() -> dict[str, dict[str, Any]]:
    with open(cicero.data_path("gases_v1RCMIP.txt"), encoding="utf8") as f:
        header = f.readline().split()
        rows = [line.split() for line in f if line.strip()]
    columns = [c.replace("TAU1(YEARS)", "TAU1").replace("NATURAL_EMISSIONS", "NAT_EM") for c in header[1:]]
    table = {}
    for row in rows:
        values = {c: row[1 + i] for i, c in enumerate(columns)}
        for c in ("BETA", "ALPHA", "TAU1", "TAU2", "TAU3", "NAT_EM", "SARF_TO_ERF"):
            values[c] = float(values[c])
        table[row[0]] = values
    return table


def _read_concentrations() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The SSP2-4.5 concentration table: years and one column per gas."""
    path = cicero.data_path("ssp245_conc_RCMIP.txt")
    with open(path, encoding="utf8") as f:
        names = f.readline().split()[1:]
    data = np.loadtxt(path, skiprows=4)
    return data[:, 0].astype(int), {n: data[:, 1 + i] for i, n in enumerate(names)}


def _chlorine_bromine(names: list[str]) -> tuple[dict[str, int], dict[str, int]]:
    """Numbers of Cl and Br atoms per halocarbon, as ciceroscm derives them from the names."""
    chlorine, bromine = {}, {}
    for tracer in names:
        if "CFC-" in tracer:
            num = tracer.split("-")[-1]
            num = int(num[:-1]) if not num[-1].isdigit() else int(num)
            bonds = ((num % 1000) // 100) * 2 + 4
            chlorine[tracer] = bonds - 2 * (num // 1000) - ((num % 100) // 10 - 1) - num % 10
        elif tracer[:2] == "H-":
            bromine[tracer] = int(tracer[5])
            if int(tracer[4]) > 0:
                chlorine[tracer] = int(tracer[4])
        elif "Cl" in tracer:
            tail = tracer.split("Cl")[-1]
            chlorine[tracer] = int(tail[0]) if tail and tail[0].isdigit() else 1
        elif "Br" in tracer:
            tail = tracer.split("Br")[-1]
            bromine[tracer] = int(tail[0]) if tail and tail[0].isdigit() else 1
    return chlorine, bromine


def _vanilla_forcing(gas: dict, conc_in: dict, emissions: dict) -> np.ndarray:
    """ERF (176,) of the 27 halocarbons plus stratospheric O3: concentrations prescribed
    before 2015, then lifetime-integrated from the SSP2-4.5 emissions (scenario-independent)."""
    names = [g for g, row in gas.items() if g not in ("CO2", "CH4", "N2O") and row["CONC_UNIT"] != "-"]
    n_pre = EMSTART - YEAR0
    conc = {}
    for g in names:
        row = gas[g]
        c = np.empty(N_YEARS)
        c[:n_pre] = conc_in[g][:n_pre]
        q = 1.0 / row["TAU1"]
        for i in range(n_pre, N_YEARS):
            emis = emissions[g][i] + row["NAT_EM"]
            c[i] = emis / row["BETA"] / q * (1 - np.exp(-q)) + c[i - 1] * np.exp(-q)
        conc[g] = c
    erf = sum(gas[g]["SARF_TO_ERF"] * gas[g]["ALPHA"] * (conc[g] - conc[g][0]) for g in names)
    chlorine, bromine = _chlorine_bromine(list(gas))
    sumcl, sumbr = np.zeros(N_YEARS), np.zeros(N_YEARS)
    for g, mult in chlorine.items():  # 3-year lag: year i uses the concentrations of year i − 3
        num = conc[g][:-3] - conc[g][0]
        sumcl[3:] += np.sign(num) * np.power(mult * np.abs(num), 1.7)
    for g, mult in bromine.items():
        sumbr[3:] += mult * (conc[g][:-3] - conc[g][0])
    strat_o3 = -(0.05 / 0.17377 * (0.000552 * sumcl + 3.048 * sumbr)) / 1000.0 * gas["STRAT_O3"]["SARF_TO_ERF"]
    return erf + strat_o3


# Impulse responses of ciceroscm's carbon cycle (carbon_cycle/rfuns.py), t in years:
#   rb(t) = Σ_k a_k·exp(−t/τ_k)                       (biosphere)
#   rs(t) = early(t) for t < 2, c + Σ_k a_k·exp(−t/τ_k) for t ≥ 2   (ocean mixed layer)
RB_TERMS = ((0.70211, 1 / 0.35), (13.4141e-3, 20.0), (-0.71846, 120.0 / 55), (2.9323e-3, 100.0))
RS_EARLY = (0.12935, ((0.21898, 0.034569), (0.17003, 0.26936), (0.24071, 0.96083), (0.24093, 4.9792)))
RS_LATE = (0.022936, ((0.24278, 1.2679), (0.13963, 5.2528), (0.089318, 18.601), (0.03782, 68.736), (0.035549, 232.3)))
FIR_LAGS = 2 * IDTM  # rs takes its "early" form for lags below 2 years = 48 sub-steps


def rs_early(lags: np.ndarray) -> np.ndarray:
    t = np.asarray(lags) / IDTM
    return RS_EARLY[0] + sum(a * np.exp(-t / tau) for a, tau in RS_EARLY[1])


@dataclasses.dataclass(frozen=True)
class Constants:
    """Everything a run needs that no scenario changes (NumPy float64 arrays over 1900..2075)."""

    baseline: dict[str, np.ndarray]  # emissions of every species (176,)
    conc_ch4: np.ndarray  # prescribed concentrations before 2015
    conc_n2o: np.ndarray
    conc_co2_pi: float  # preindustrial CO2 = the 1900 concentration
    conc_ch4_ref: float  # CH4 concentration in the tropospheric-O3 reference year 2010
    nat_ch4: np.ndarray
    nat_n2o: np.ndarray
    forcing_fixed: np.ndarray  # halocarbons + stratospheric O3 (all hemispheres alike)
    forcing_landuse: np.ndarray
    trop_o3_other: np.ndarray  # NOx/CO/NMVOC part of the tropospheric-O3 proxy
    ch4_lifetime_other: np.ndarray  # NOx/CO/NMVOC part of d ln OH
    gas: dict[str, dict[str, Any]]
    pamset_udm: dict[str, float]
    pamset_emiconc: dict[str, float]
    pamset_carbon: dict[str, float]


@lru_cache(maxsize=4)
def _constants(udm_items: tuple, emi_items: tuple) -> Constants:
    pamset_udm = {**UDM_DEFAULTS, **dict(udm_items)}
    pamset_emiconc = {**EMICONC_DEFAULTS, **dict(emi_items)}
    gas = _read_gas_table()
    names, table = cicero.read_emission_table()
    emissions = dict(zip(names, table.T))
    conc_years, conc_all = _read_concentrations()
    conc_in = {g: c[(conc_years >= YEAR0) & (conc_years <= cicero.END_YEAR)] for g, c in conc_all.items()}
    nat = {g: np.loadtxt(cicero.data_path(f"natemis_{g.lower()}.txt"))[YEAR0 - 1750 : YEAR0 - 1750 + N_YEARS] for g in ("CH4", "N2O")}
    luc = np.loadtxt(cicero.data_path("IPCC_LUCalbedo.txt"))[YEAR0 - 1750 : YEAR0 - 1750 + N_YEARS]
    ref = pamset_emiconc["ref_yr"] - YEAR0
    i2000 = 2000 - YEAR0
    e = emissions
    trop_o3_other = 0.17 * (e["NOx"] - e["NOx"][ref]) + 0.0014 * (e["CO"] - e["CO"][ref]) + 0.0042 * (e["NMVOC"] - e["NMVOC"][ref])
    ch4_other = 0.0042 * (e["NOx"] - e["NOx"][i2000]) - 0.000105 * (e["CO"] - e["CO"][i2000]) - 0.000315 * (e["NMVOC"] - e["NMVOC"][i2000])
    return Constants(
        baseline=emissions,
        conc_ch4=conc_in["CH4"],
        conc_n2o=conc_in["N2O"],
        conc_co2_pi=float(conc_in["CO2"][0]),
        conc_ch4_ref=float(conc_all["CH4"][conc_years == pamset_emiconc["ref_yr"]][0]),
        nat_ch4=nat["CH4"],
        nat_n2o=nat["N2O"],
        forcing_fixed=_vanilla_forcing(gas, conc_in, emissions),
        forcing_landuse=luc,
        trop_o3_other=trop_o3_other,
        ch4_lifetime_other=ch4_other,
        gas=gas,
        pamset_udm=pamset_udm,
        pamset_emiconc=pamset_emiconc,
        pamset_carbon=dict(CARBON_DEFAULTS),
    )


# --- the year step ------------------------------------------------------------------------------


class CiceroState(NamedTuple):
    """The model's state after a simulated year (a pytree; every leaf an array)."""

    recent_s: jax.Array  # the last FIR_LAGS sub-steps' ocean uptake s, newest first, (48,)
    tail_s: jax.Array  # older uptake weighted by rs's late exponentials, (5,)
    tail_s_sum: jax.Array  # and its plain sum (rs's constant term)
    land: jax.Array  # NPP perturbation history weighted by rb's exponentials, (4,)
    y_co2: jax.Array  # mixed-layer pCO2 perturbation
    x_co2: jax.Array  # atmospheric CO2 (ppm)
    em_prev: jax.Array  # last sub-step's net emission (ppm)
    ss1: jax.Array
    sums: jax.Array
    ch4: jax.Array  # concentrations of the year (ppb)
    n2o: jax.Array
    co2_1900: jax.Array  # the reference concentration of the forcing formulas
    tn: jax.Array  # ocean layer temperatures, (LAYERS,) per hemisphere
    ts: jax.Array
    fn_prev: jax.Array  # last year's hemispheric forcing (the ocean interpolates within the year)
    fs_prev: jax.Array
    dtemp: jax.Array  # last year's dT_glob (the carbon cycle's temperature feedback)
    year_index: jax.Array  # years simulated so far


def _table_row(year_index: jax.Array) -> jax.Array:
    """Row of the year-indexed inputs (1900..2075): years after 2075 hold the 2075 row, so
    the model runs on past the scenario table with every uncontrolled input at its last value
    (RICE-N's climate modules run it to 2114; docs/climate_modules.md)."""
    return jnp.minimum(year_index, N_YEARS - 1)


def _sigmoid(x, center, width):
    return 1.0 / (1.0 + jnp.exp(-((x - center) / width)))


class CiceroJAX:
    """CICERO-SCM 2.1.3 as pure JAX functions (see the module docstring).

    >>> model = CiceroJAX()                                         # doctest: +SKIP
    >>> out = model.run(E)           # E: (61, 5) controllable emissions 2015..2075 -> dict of (176,)
    >>> out["dT_glob_air"][-1]       # 2.101341 K for SSP2-4.5

    ``dtype`` is that of the state and outputs (float64 needs ``jax_enable_x64``); the
    constant inputs are prepared in float64 and cast. ``unroll``: sub-steps per loop iteration
    of a year's carbon-cycle (24) and ocean (12) scans, ``True`` for all of them, ``None``
    (default) 4 on an accelerator and 1 on the CPU (:func:`jaxclimate.core.loops.loop_unroll`):
    the same arithmetic in fewer loop iterations, for a longer compile.
    """

    def __init__(self, pamset_udm: dict | None = None, pamset_emiconc: dict | None = None, dtype: Any = None, unroll: int | bool | None = None):
        pamset_udm = dict(cicero.PAMSET_UDM if pamset_udm is None else pamset_udm)
        pamset_emiconc = dict(cicero.PAMSET_EMICONC if pamset_emiconc is None else pamset_emiconc)
        _check_supported(pamset_udm, pamset_emiconc)
        self.dtype = jnp.dtype(dtype) if dtype is not None else jnp.zeros(()).dtype
        self.unroll = unroll  # sub-steps per loop iteration of a year's two scans (see the docstring)
        self.constants = _constants(tuple(sorted(pamset_udm.items())), tuple(sorted(pamset_emiconc.items())))
        self._prepare()

    # -- constants as device arrays ----------------------------------------------------------
    def _prepare(self) -> None:
        c, f = self.constants, lambda x: jnp.asarray(x, self.dtype)
        fir = rs_early(np.arange(FIR_LAGS))
        fir[0] = 0.0  # ciceroscm's mixed-layer sum leaves out lag 0 (the previous sub-step)
        self._fir = f(fir)  # applied to recent_s = (s[it−1], s[it−2], …): lag = index
        self._rb_coef = f([a for a, _ in RB_TERMS])
        self._rb_decay = f([np.exp(-1 / (IDTM * tau)) for _, tau in RB_TERMS])
        self._rs_coef = f([a for a, _ in RS_LATE[1]])
        self._rs_decay = f([np.exp(-1 / (IDTM * tau)) for _, tau in RS_LATE[1]])
        self._rs_entry = f([np.exp(-FIR_LAGS / (IDTM * tau)) for _, tau in RS_LATE[1]])
        b = c.baseline
        self._fixed = {
            k: f(v)
            for k, v in {
                "SO2": b["SO2"],
                "BC": b["BC"],
                "OC": b["OC"],
                "BMB_AEROS_OC": b["BMB_AEROS_OC"],
                "conc_ch4": c.conc_ch4,
                "conc_n2o": c.conc_n2o,
                "nat_ch4": c.nat_ch4,
                "nat_n2o": c.nat_n2o,
                "forcing_fixed": c.forcing_fixed,
                "landuse": c.forcing_landuse,
                "trop_o3_other": c.trop_o3_other,
                "ch4_other": c.ch4_lifetime_other,
            }.items()
        }
        self._udm = self._ocean_constants(self.constants.pamset_udm)

    def ocean_constants(self, overrides: dict[str, Any] | None) -> dict[str, Any]:
        """The ocean's coefficients, from the parameter set with ``overrides`` (traced values of
        :data:`OCEAN_PARAMETERS`, e.g. ``{"lambda": λ}``) in place; the prepared ones if ``None``."""
        if overrides is None:
            return self._udm
        unknown = set(overrides) - set(OCEAN_PARAMETERS)
        if unknown:
            raise ValueError(f"CiceroJAX: ocean parameters {sorted(unknown)} cannot be overridden; valid: {OCEAN_PARAMETERS}")
        return self._ocean_constants({**self.constants.pamset_udm, **overrides})

    def _ocean_constants(self, p: dict[str, Any]) -> dict[str, Any]:
        dt = SEC_YEAR / LDTIME
        c1 = HEAT_CAPACITY
        dz = np.full(LAYERS, DEEP_LAYER)
        dz[0] = p["mixed"]
        rlamda = 1.0 / p["lambda"]
        foan, foas, rlamdo, beto = p["foan"], p["foas"], p["rlamdo"], p["beto"]
        fnso = foan / foas
        gamn = foan + rlamda / rlamdo
        gams = foas + rlamda / rlamdo
        c1fac = dt / (c1 * dz[0])
        det = gams * gamn
        rakapafac = 2.0 * 1.0e-4 * p["akapa"] * dt
        u = {
            "dt": dt,
            "dz0": dz[0],
            "dzl": dz[-1],
            "cpi": p["cpi"],
            "W": p["W"],
            "threstemp": p["threstemp"],
            "foan": foan,
            "foas": foas,
            "rlamdo": rlamdo,
            "rlamda": rlamda,
            "fnx": rlamda + foan * rlamdo,
            "fsx": rlamda + foas * rlamdo,
            "dtrm2n": beto * c1fac,
            "dtrm3n": gams / det * c1fac,
            "dtrm2s": fnso * beto * c1fac,
            "dtrm3s": gamn / det * c1fac,
            "beto_n": beto * dt / (c1 * dz[0]),
            "beto_s": fnso * beto * dt / (c1 * dz[0]),
            "gam_fro_n": rlamdo * (1.0 - foan * gams / (gams * gamn)) * dt / (c1 * dz[0]),
            "gam_fro_s": rlamdo * (1.0 - foas * gamn / (gamn * gams)) * dt / (c1 * dz[0]),
            "coeff_c1": -rakapafac / (dz[0] * dz[1]),
            "coeff_a0": -rakapafac / dz[1] ** 2,
            "coeff_a_mid": -rakapafac / (dz[2:] * (dz[1:-1] + dz[2:])),
            "coeff_c2": -rakapafac / (dz[1:-1] * (dz[1:-1] + dz[2:])),
            "inv_dz0": 1.0 / dz[0],
            "inv_dz1": 1.0 / dz[1],
            "inv_dz_mid": 1.0 / dz[1:-1],
            "inv_dz_last": 1.0 / dz[-1],
            "deep_n": beto * dt / (c1 * dz[1:-1]),
            "deep_s": fnso * beto * dt / (c1 * dz[1:-1]),
        }
        dtmnl3 = dt * beto / (c1 * dz[-1])
        u.update(dtmnl3=dtmnl3, dtmnl1=1.0 - dtmnl3, dtmsl3=fnso * dtmnl3, dtmsl1=1.0 - fnso * dtmnl3)
        u["gam_fro"] = jnp.stack([jnp.asarray(u["gam_fro_n"], self.dtype), jnp.asarray(u["gam_fro_s"], self.dtype)])
        return {k: (jnp.asarray(v, self.dtype) if isinstance(v, (np.ndarray, jax.Array)) else v) for k, v in u.items()}

    # -- state ---------------------------------------------------------------------------------
    def zero_state(self) -> CiceroState:
        z = jnp.zeros((), self.dtype)
        c = self.constants
        return CiceroState(
            recent_s=jnp.zeros(FIR_LAGS, self.dtype),
            tail_s=jnp.zeros(len(RS_LATE[1]), self.dtype),
            tail_s_sum=z,
            land=jnp.zeros(len(RB_TERMS), self.dtype),
            y_co2=z,
            x_co2=jnp.asarray(c.conc_co2_pi, self.dtype),
            em_prev=z,
            ss1=z,
            sums=z,
            ch4=jnp.asarray(c.conc_ch4[0], self.dtype),
            n2o=jnp.asarray(c.conc_n2o[0], self.dtype),
            co2_1900=jnp.asarray(c.conc_co2_pi, self.dtype),
            tn=jnp.zeros(LAYERS, self.dtype),
            ts=jnp.zeros(LAYERS, self.dtype),
            fn_prev=z,
            fs_prev=z,
            dtemp=z,
            year_index=jnp.zeros((), jnp.int32),
        )

    # -- 1. carbon cycle -------------------------------------------------------------------------
    def _mixed_layer_history(self, recent_s, tail_s, tail_s_sum):
        """Σ_{lag ≥ 1} s[it−1−lag]·rs(lag): a 47-lag FIR on the recent sub-steps plus the
        exponential tail (exact convolution; only the summation order differs)."""
        return jnp.dot(recent_s, self._fir) + RS_LATE[0] * tail_s_sum + jnp.dot(tail_s, self._rs_coef)

    def _pco2(self, history, s_now, mixed_layer, solubility):
        z = PPMKG_TO_UMOL_PER_VOL * GE_COEFF / IDTM / mixed_layer * (history + 0.5 * s_now)
        poly = sum(coef * z ** (k + 1) for k, coef in enumerate(_PCO2_POLY))
        zmax = Z_CO2_MAX
        at_max = sum(coef * zmax ** (k + 1) for k, coef in enumerate(_PCO2_POLY))
        slope = sum((k + 1) * coef * zmax**k for k, coef in enumerate(_PCO2_POLY))
        above = at_max + slope * zmax * jnp.log(jnp.maximum(z, zmax) / zmax)
        return solubility * jnp.where(z <= zmax, poly, above)

    def _carbon_year(self, state: CiceroState, em_co2: jax.Array) -> CiceroState:
        p, pi = self.constants.pamset_carbon, self.constants.conc_co2_pi
        dtemp = state.dtemp
        sig = lambda x: _sigmoid(x, p["t_half"], p["w_sigmoid"])  # noqa: E731
        thr = lambda x: 1.0 - _sigmoid(x, p["t_threshold"], p["w_threshold"])  # noqa: E731
        fnpp = 60.0 / (sig(0.0) * thr(0.0)) * sig(dtemp) * thr(dtemp)
        solubility = jnp.clip(jnp.exp(-p["solubility_sens"] * dtemp), 0.0, 1.0 + p["solubility_limit"])
        ml_sig = lambda x: _sigmoid(x, p["ml_t_half"], p["ml_w_sigmoid"])  # noqa: E731
        mixed_layer = jnp.maximum(p["mixed_carbon"] * (1 - p["ml_fracmax"] * ml_sig(dtemp)) / (1 - p["ml_fracmax"] * ml_sig(0.0)), p["ml_depth_min"])
        dt = 1.0 / IDTM
        oa_ge = OCEAN_AREA * GE_COEFF
        cc1 = dt * oa_ge / (1 + dt * oa_ge / 2.0)

        def sub_step(carry, k):
            recent_s, tail_s, tail_s_sum, land, y, x, em_prev, ss1, sums = carry
            it = state.year_index * IDTM + k
            first = it == 0
            npp = jnp.where(first, 0.0, fnpp * p["beta_f"] * jnp.log(x / pi))
            ffer = npp - dt * jnp.dot(land, self._rb_coef)  # land: Σ_{j<it} npp[j]·exp(−lag/τ)
            land = self._rb_decay * land + npp
            em = (em_co2 - ffer) / PPM_CO2_TO_PG_C
            ss1 = jnp.where(first, 0.5 * em / oa_ge, ss1)
            ss2 = jnp.where(first, ss1, 0.5 * em / oa_ge - y / (dt * oa_ge))
            sums = jnp.where(first, 0.0, sums + em_prev / oa_ge - recent_s[0])
            s_now = cc1 * (sums + ss1 + ss2)
            history = self._mixed_layer_history(recent_s, tail_s, tail_s_sum)
            y_prev = y
            y_pred = self._pco2(history, s_now, mixed_layer, solubility)
            big = jnp.maximum(jnp.abs(y_pred), jnp.abs(y_prev))
            small = jnp.minimum(jnp.abs(y_pred), jnp.abs(y_prev))
            correct = (it > 0) & (big > 1.0e-6) & (big > 2.0 * small)  # ciceroscm's pCO2 corrector
            s_now = jnp.where(correct, cc1 * (sums + ss1 + 0.5 * em / oa_ge - 0.5 * (y_prev + y_pred) / (dt * oa_ge)), s_now)
            y = jnp.where(correct, self._pco2(history, s_now, mixed_layer, solubility), y_pred)
            x = s_now + 0.5 * y + 0.5 * y_prev + pi
            leaving = recent_s[-1]  # reaches lag FIR_LAGS at the next sub-step: into the tail
            tail_s = self._rs_decay * tail_s + self._rs_entry * leaving
            tail_s_sum = tail_s_sum + leaving
            recent_s = jnp.concatenate([s_now[None], recent_s[:-1]])
            return (recent_s, tail_s, tail_s_sum, land, y, x, em, ss1, sums), None

        carry = (state.recent_s, state.tail_s, state.tail_s_sum, state.land, state.y_co2, state.x_co2, state.em_prev, state.ss1, state.sums)
        (recent_s, tail_s, tail_s_sum, land, y, x, em_prev, ss1, sums), _ = jax.lax.scan(
            sub_step, carry, jnp.arange(IDTM), unroll=loop_unroll(self.unroll, 4)
        )
        return state._replace(
            recent_s=recent_s, tail_s=tail_s, tail_s_sum=tail_s_sum, land=land, y_co2=y, x_co2=x, em_prev=em_prev, ss1=ss1, sums=sums
        )

    # -- 2. CH4 and N2O ---------------------------------------------------------------------------
    def _gases_year(self, state: CiceroState, em_ch4, em_n2o) -> CiceroState:
        i, gas, f = _table_row(state.year_index), self.constants.gas, self._fixed
        q_ch4 = (1.0 / gas["CH4"]["TAU1"]) * (1.0 - 0.32 * (jnp.log(state.ch4) - np.log(1751.0)) + f["ch4_other"][i])
        q_ch4 = q_ch4 + 1.0 / gas["CH4"]["TAU2"] + 1.0 / gas["CH4"]["TAU3"]

        def lifetime(conc, q, emis, beta):
            point = emis / beta
            return point / q + (conc - point / q) * jnp.exp(-q)

        ch4 = lifetime(state.ch4, q_ch4, em_ch4 + f["nat_ch4"][i], gas["CH4"]["BETA"])
        n2o = lifetime(state.n2o, 1.0 / gas["N2O"]["TAU1"], em_n2o + f["nat_n2o"][i], gas["N2O"]["BETA"])
        prescribed = YEAR0 + i < EMSTART
        return state._replace(ch4=jnp.where(prescribed, f["conc_ch4"][i], ch4), n2o=jnp.where(prescribed, f["conc_n2o"][i], n2o))

    # -- 3. forcing ----------------------------------------------------------------------------
    def _forcing(self, state: CiceroState, em_so2) -> dict[str, jax.Array]:
        i, gas, f, q = _table_row(state.year_index), self.constants.gas, self._fixed, self.constants.pamset_emiconc
        c, c0 = state.x_co2, state.co2_1900
        n, n0 = state.n2o, f["conc_n2o"][0]
        m, m0 = state.ch4, f["conc_ch4"][0]
        out = {
            "CO2": gas["CO2"]["SARF_TO_ERF"]
            * (-2.4e-7 * (c - c0) ** 2 + 7.2e-4 * jnp.abs(c - c0) - 2.1e-4 * 0.5 * (n0 + n) + 5.36)
            * jnp.log(c / c0),
            "N2O": gas["N2O"]["SARF_TO_ERF"]
            * (-8.0e-6 * 0.5 * (c + c0) + 4.2e-6 * 0.5 * (n + n0) - 4.9e-6 * 0.5 * (m + m0) + 0.117)
            * (jnp.sqrt(n) - jnp.sqrt(n0)),
            "CH4": gas["CH4"]["SARF_TO_ERF"] * (-1.3e-6 * 0.5 * (m + m0) - 8.2e-6 * 0.5 * (n + n0) + 0.043) * (jnp.sqrt(m) - jnp.sqrt(m0)),
        }
        so2 = em_so2 - f["SO2"][0]
        out["SO4_DIR"] = q["qdirso2"] * so2
        out["SO4_IND"] = q["qindso2"] * so2
        out["BC"] = q["qbc"] * (f["BC"][i] - f["BC"][0])
        out["OC"] = q["qoc"] * (f["OC"][i] - f["OC"][0])
        out["BMB_AEROS"] = q["qbmb"] * (f["BMB_AEROS_OC"][i] - f["BMB_AEROS_OC"][0])
        proxy = 30.0 + 6.7 * (jnp.log(m) - np.log(self.constants.conc_ch4_ref)) + f["trop_o3_other"][i]
        proxy0 = 30.0 + 6.7 * (jnp.log(m0) - np.log(self.constants.conc_ch4_ref)) + f["trop_o3_other"][0]
        out["TROP_O3"] = gas["TROP_O3"]["SARF_TO_ERF"] * (proxy - proxy0) / (30.0 - proxy0) * q["qo3"]
        out["STRAT_H2O"] = gas["STRAT_H2O"]["SARF_TO_ERF"] * q["qh2o_ch4"] * out["CH4"]
        out["LANDUSE"] = f["landuse"][i]
        out["FIXED"] = f["forcing_fixed"][i]
        aerosols = out["SO4_DIR"] + out["SO4_IND"] + out["BC"] + out["OC"] + out["BMB_AEROS"]
        even = out["CO2"] + out["N2O"] + out["CH4"] + out["STRAT_H2O"] + out["FIXED"]
        out["Total_forcing"] = even + aerosols + out["TROP_O3"] + out["LANDUSE"]
        out["NH"] = even + AEROSOL_SPLIT * aerosols + TROP_O3_SPLIT * out["TROP_O3"] + LANDUSE_SPLIT * out["LANDUSE"]
        out["SH"] = even + (2 - AEROSOL_SPLIT) * aerosols + (2 - TROP_O3_SPLIT) * out["TROP_O3"] + (2 - LANDUSE_SPLIT) * out["LANDUSE"]
        return out

    # -- 4. ocean ------------------------------------------------------------------------------
    def _ocean_matrix(self, wcfac, u):
        """The two hemispheres' tridiagonal systems, layers × (NH, SH): (dl, d, du), each (40, 2)."""
        col = lambda v: jnp.broadcast_to(jnp.asarray(v, self.dtype), (2,))[None]  # noqa: E731
        c = jnp.concatenate([col(0.0), col(u["coeff_c1"]), u["coeff_c2"][:, None] - wcfac[None] * u["inv_dz_mid"][:, None]])
        a = jnp.concatenate([(u["coeff_a0"] + wcfac * u["inv_dz1"])[None], jnp.broadcast_to(u["coeff_a_mid"][:, None], (LAYERS - 2, 2)), col(0.0)])
        b = jnp.concatenate(
            [(1.0 - c[1] + u["gam_fro"] - wcfac * u["inv_dz0"])[None], 1.0 - a[:-2] - c[2:], (1.0 - a[-2] + wcfac * u["inv_dz_last"])[None]]
        )
        # row r: a[r−1]·x[r−1] + b[r]·x[r] + c[r+1]·x[r+1] (LAPACK gtsv's dl = a[:-1], du = c[1:])
        return jnp.concatenate([col(0.0), a[:-1]]), b, jnp.concatenate([c[1:], col(0.0)])

    def _ocean_year(self, state: CiceroState, fn, fs, u) -> tuple[CiceroState, dict[str, jax.Array]]:
        """One year of the upwelling–diffusion ocean, both hemispheres at once: temperatures are
        (40 layers, 2) with the NH in column 0, so each elementwise operation serves both."""
        pair = lambda n, s_: jnp.stack([jnp.asarray(n, self.dtype), jnp.asarray(s_, self.dtype)])  # noqa: E731
        beto, dtrm2, dtrm3 = pair(u["beto_n"], u["beto_s"]), pair(u["dtrm2n"], u["dtrm2s"]), pair(u["dtrm3n"], u["dtrm3s"])
        deep = jnp.stack([u["deep_n"], u["deep_s"]], axis=1)
        dtml1, dtml3 = pair(u["dtmnl1"], u["dtmsl1"]), pair(u["dtmnl3"], u["dtmsl3"])
        fo, fx = pair(u["foan"], u["foas"]), pair(u["fnx"], u["fsx"])
        forcing, previous = jnp.stack([fn, fs]), jnp.stack([state.fn_prev, state.fs_prev])

        def sub_step(carry, im):
            T, temp1, acc = carry  # T: (40, 2)
            wcfac = u["W"] / SEC_YEAR * (1 - 0.3 * temp1 / u["threstemp"]) * u["dt"]
            dtrm1 = 1.0 - u["cpi"] * wcfac / u["dz0"] - beto
            frac = (im + 1) / LDTIME
            dq = frac * forcing + (1 - frac) * previous
            other = T[:, ::-1]  # the other hemisphere's layers
            rhs = jnp.concatenate(
                [
                    (dtrm1 * T[0] + dtrm2 * other[0] + dtrm3 * dq)[None],
                    T[1:-1] + deep * (other[1:-1] - T[1:-1]),
                    (dtml1 * T[-1] + wcfac * u["cpi"] / u["dzl"] * T[0] + dtml3 * other[-1])[None],
                ]
            )
            T = tridiagonal_solve(*self._ocean_matrix(wcfac, u), rhs, fused=True)
            temp1 = T[0]
            air = (dq + fo * u["rlamdo"] * temp1) / fx
            mixed = fo * temp1 + (1.0 - fo) * air
            acc = tuple(a + v / LDTIME for a, v in zip(acc, (mixed, air, temp1)))
            return (T, temp1, acc), None

        zero = jnp.zeros(2, self.dtype)
        T0 = jnp.stack([state.tn, state.ts], axis=1)
        (T, _, (mixed, air, sea)), _ = jax.lax.scan(sub_step, (T0, zero, (zero,) * 3), jnp.arange(LDTIME), unroll=loop_unroll(self.unroll, 4))
        out = {
            "dT_glob": (mixed[0] + mixed[1]) / 2.0,
            "dT_NH": mixed[0],
            "dT_SH": mixed[1],
            "dT_glob_air": (air[0] + air[1]) / 2.0,
            "dT_NH_air": air[0],
            "dT_SH_air": air[1],
            "dT_glob_sea": (sea[0] + sea[1]) / 2.0,
            "RIB_glob": ((fn - u["rlamda"] * mixed[0]) + (fs - u["rlamda"] * mixed[1])) / 2.0,
        }
        return state._replace(tn=T[:, 0], ts=T[:, 1], fn_prev=fn, fs_prev=fs, dtemp=out["dT_glob"]), out

    # -- one year, and whole runs -------------------------------------------------------------
    @at_physics_precision
    def step(self, state: CiceroState, emissions_t: jax.Array, ocean: dict[str, Any] | None = None) -> tuple[CiceroState, dict[str, jax.Array]]:
        """Simulate year 1900 + ``state.year_index`` with the controllable emissions
        ``emissions_t`` (5,) (CO2_FF, CO2_AFOLU, CH4, N2O, SO2); returns the new state and the
        year's outputs (temperatures, concentrations, forcing per component). ``ocean``:
        overrides of the ocean's parameters (:meth:`ocean_constants`), e.g. a drawn ``lambda``."""
        e = jnp.asarray(emissions_t, self.dtype)
        state = self._carbon_year(state, e[0] + e[1] + self.constants.gas["CO2"]["NAT_EM"])
        state = state._replace(co2_1900=jnp.where(state.year_index == 0, state.x_co2, state.co2_1900))
        state = self._gases_year(state, e[2], e[3])
        forcing = self._forcing(state, e[4])
        state, temps = self._ocean_year(state, forcing["NH"], forcing["SH"], self.ocean_constants(ocean))
        out = {**temps, **{f"F_{k}": v for k, v in forcing.items()}, "CO2": state.x_co2, "CH4": state.ch4, "N2O": state.n2o}
        return state._replace(year_index=state.year_index + 1), out

    def run_years(self, state: CiceroState, emissions: jax.Array) -> tuple[CiceroState, dict[str, jax.Array]]:
        """``lax.scan`` of :meth:`step` over ``emissions`` (years, 5)."""
        return jax.lax.scan(self.step, state, jnp.asarray(emissions, self.dtype))

    def full_emissions(self, controllable_2015_2075: Any) -> jax.Array:
        """(…, 61, 5) scenario emissions -> (…, 176, 5): SSP2-4.5 before 2015."""
        e = jnp.asarray(controllable_2015_2075, self.dtype)
        prefix = jnp.asarray(cicero.baseline_controllable()[: EMSTART - YEAR0], self.dtype)
        return jnp.concatenate([jnp.broadcast_to(prefix, (*e.shape[:-2], *prefix.shape)), e], axis=-2)

    def run(self, controllable_2015_2075: Any) -> dict[str, jax.Array]:
        """Outputs (176,) for 1900..2075 of one scenario (61, 5); jit/vmap/grad as you like."""
        return self.run_years(self.zero_state(), self.full_emissions(controllable_2015_2075))[1]


def x64_context():
    """A context in which JAX computes in float64 (the API moved between jax versions)."""
    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(True)
    from jax.experimental import enable_x64  # older jax

    return enable_x64()


@lru_cache(maxsize=1)
def _float64_batch_runner():
    with x64_context():
        model = CiceroJAX(dtype=jnp.float64)
    return model, jax.jit(jax.vmap(lambda e: model.run(e)["dT_glob_air"]))


def run_batch(controllable_2015_2075: np.ndarray) -> np.ndarray:
    """``dT_glob_air`` (B, 176) in float64 for (B, 61, 5) scenarios — the oracle's
    ``CiceroOracle.run_batch`` numbers (to ≤ 1e-12 K), as one vectorised program."""
    arr = cicero.check_controllable_emissions(controllable_2015_2075)
    if arr.ndim != 3:
        raise ValueError(f"run_batch takes scenarios of shape (B, 61, 5), got {arr.shape}")
    _, runner = _float64_batch_runner()
    with x64_context():
        return np.asarray(runner(jnp.asarray(arr, jnp.float64)))
