"""CICERO-SCM (``ciceroscm`` 2.x from PyPI) as an offline oracle.

The oracle turns emission paths into global-mean surface air temperature change
``dT_glob_air`` (K, raw, not rebased) for 1900..2075. It is never inside a training loop: it
generates the surrogate's training data and replays trajectories for validation.

Configuration (the paper's calibration, adapted to ciceroscm 2.x):

* SSP2-4.5 inputs shipped in ``jaxclimate/climate/data`` (SO2 in Tg S), the two ``CO2``
  emission columns renamed ``CO2_FF``/``CO2_AFOLU``, emissions restricted to 1900..2075;
* ``nystart=1900, emstart=2015, nyend=2075, idtm=24``; no solar/volcanic forcing;
* ``PAMSET_UDM``: the paper's "13555_old_NR_improved" thermal parameters;
* ``PAMSET_EMICONC``: the paper's aerosol coefficients converted to ciceroscm ≥ 1.5 semantics,
  q_new = q_old / (E(2010) − E(1900)), since 2.x reads them as forcing per unit emission.

A scenario replaces the five controllable species (CO2_FF, CO2_AFOLU, CH4, N2O, SO2) for
2015..2075; everything else stays at SSP2-4.5.

**Restart technique.** Every scenario shares 1900..2014, so :class:`CiceroOracle` runs that
prefix once, snapshots the model state, and per scenario only runs 2015..2075 from a copy of
the snapshot: bit-identical to a full run and 2.5–3× faster. It uses ciceroscm internals, so
the ``cicero`` extra pins ``ciceroscm==2.1.3`` and the tests compare against a fresh full run.

ciceroscm is an optional dependency: ``pip install "jaxclimate[cicero]"``.
"""

from __future__ import annotations

import copy
import multiprocessing
import os
import warnings
from functools import lru_cache
from importlib import resources
from typing import Any, Sequence

import numpy as np

START_YEAR, SCENARIO_START, END_YEAR = 1900, 2015, 2075
YEARS = np.arange(START_YEAR, END_YEAR + 1)
N_YEARS = len(YEARS)  # 176
N_SCENARIO_YEARS = END_YEAR - SCENARIO_START + 1  # 61
CONTROLLABLE = ("CO2_FF", "CO2_AFOLU", "CH4", "N2O", "SO2")
CONTROLLABLE_UNITS = ("Pg C/yr", "Pg C/yr", "Tg CH4/yr", "Tg N/yr", "Tg S/yr")
# Species whose emissions cannot be negative (CO2 can: land-use sinks, removals).
NON_NEGATIVE = ("CH4", "N2O", "SO2")

RUN_CONFIG = {"nystart": START_YEAR, "emstart": SCENARIO_START, "nyend": END_YEAR, "idtm": 24}
PAMSET_UDM = {
    "rlamdo": 15.08357,
    "akapa": 0.6568376339229769,
    "cpi": 0.2077266,
    "W": 2.205919,
    "beto": 6.89822,
    "lambda": 0.6062529,
    "mixed": 107.2422,
}
# Paper values (qdirso2 −0.3562, qindso2 −0.96609, qbc 0.1566, qoc −0.0806) divided by
# E(2010) − E(1900) of SO2 (46.92132903 Tg S), BC (5.96767575 Tg), OC (12.52814599 Tg).
PAMSET_EMICONC = {
    "qbmb": 0.0,
    "qo3": 0.5,
    "qdirso2": -0.007591430323132091,
    "qindso2": -0.020589570243892984,
    "qbc": 0.02624137211208233,
    "qoc": -0.006433513790814309,
}
CICEROSCM_VERSION = "2.1.3"
_OUTPUT = "dT_glob_air"

_DATA_FILES = {
    "gaspam": "gases_v1RCMIP.txt",
    "emissions": "ssp245_em_RCMIP.txt",
    "concentrations": "ssp245_conc_RCMIP.txt",
    "nat_ch4": "natemis_ch4.txt",
    "nat_n2o": "natemis_n2o.txt",
}


def data_path(name: str) -> str:
    """Path of a shipped input file (see ``data/PROVENANCE.md``)."""
    return str(resources.files("jaxclimate.climate").joinpath("data", name))


def require_ciceroscm():
    """Import ciceroscm or raise an ImportError that names the extra to install."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import ciceroscm  # noqa: F401
            from ciceroscm import CICEROSCM, input_handler
    except ImportError as err:
        raise ImportError('The CICERO-SCM oracle needs the optional package ciceroscm: pip install "jaxclimate[cicero]"') from err
    return CICEROSCM, input_handler


def read_emission_table(path: str | None = None) -> tuple[list[str], np.ndarray]:
    """Species names (model order, CO2 columns renamed) and emissions for 1900..2075,
    shape (176, 40), parsed with NumPy (no ciceroscm or pandas needed)."""
    path = data_path(_DATA_FILES["emissions"]) if path is None else path
    with open(path, encoding="utf8") as f:
        names = f.readline().split()[1:]
    names = ["CO2_FF", "CO2_AFOLU"] + names[2:]
    table = np.loadtxt(path, skiprows=4)
    rows = (table[:, 0] >= START_YEAR) & (table[:, 0] <= END_YEAR)
    years = table[rows, 0].astype(int)
    if not np.array_equal(years, YEARS):
        raise ValueError(f"{path}: expected the years {START_YEAR}..{END_YEAR}")
    return names, table[rows, 1:]


@lru_cache(maxsize=1)
def baseline_controllable() -> np.ndarray:
    """SSP2-4.5 emissions of the five controllable species, 1900..2075, shape (176, 5)."""
    names, table = read_emission_table()
    return table[:, [names.index(g) for g in CONTROLLABLE]].copy()


def oracle_inputs(emissions: np.ndarray) -> np.ndarray:
    """Controllable emissions (k, Y, 5) of episodes from 2016 -> oracle inputs (k, 61, 5) for
    2015..2075: 2015 is the SSP2-4.5 value (the game's history), the years after the episode's
    continue at baseline growth (they cannot affect the episode's years: the model is causal)."""
    emissions = np.asarray(emissions, np.float64)
    base = baseline_controllable()
    i2015 = 2015 - START_YEAR
    k, years = emissions.shape[:2]
    out = np.empty((k, N_SCENARIO_YEARS, 5))
    out[:, 0] = base[i2015]
    out[:, 1 : 1 + years] = emissions
    growth = base[i2015 + 1 + years :] / base[i2015 + years : -1]  # after the episode
    out[:, 1 + years :] = np.maximum(emissions[:, -1:, :] * np.cumprod(growth, axis=0)[None], 0.0)
    return out


@lru_cache(maxsize=1)
def _load_inputs() -> dict[str, Any]:
    """The ciceroscm input frames, read once per process."""
    _, input_handler = require_ciceroscm()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        emissions = input_handler.read_inputfile(data_path(_DATA_FILES["emissions"]), True, START_YEAR, END_YEAR)
        emissions = emissions.rename(columns={"CO2": "CO2_FF", "CO2.1": "CO2_AFOLU"}).loc[START_YEAR:END_YEAR]
        return {
            "gaspam_data": input_handler.read_components(data_path(_DATA_FILES["gaspam"])),
            "concentrations_data": input_handler.read_inputfile(data_path(_DATA_FILES["concentrations"]), True, 1750, 2100),
            "emissions_data": emissions.astype(np.float64),
            "nat_ch4_data": input_handler.read_natural_emissions(data_path(_DATA_FILES["nat_ch4"]), "CH4"),
            "nat_n2o_data": input_handler.read_natural_emissions(data_path(_DATA_FILES["nat_n2o"]), "N2O"),
        }


def check_controllable_emissions(emissions: Any, n_years: int = N_SCENARIO_YEARS) -> np.ndarray:
    """Validate controllable emissions of shape (..., n_years, 5) (2015..2075 by default)."""
    arr = np.asarray(emissions, dtype=np.float64)
    if arr.ndim < 2 or arr.shape[-2:] != (n_years, len(CONTROLLABLE)):
        raise ValueError(
            f"controllable emissions must have shape (..., {n_years}, {len(CONTROLLABLE)}) "
            f"(years {END_YEAR - n_years + 1}..{END_YEAR} × {', '.join(CONTROLLABLE)}), got {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError("controllable emissions contain NaN or Inf")
    for g in NON_NEGATIVE:
        i = CONTROLLABLE.index(g)
        if np.any(arr[..., i] < 0):
            raise ValueError(f"{g} emissions must be >= 0 (min {arr[..., i].min():g} {CONTROLLABLE_UNITS[i]})")
    return arr


def scenario_frame(controllable_2015_2075: np.ndarray):
    """The full 176 × 40 emission frame: SSP2-4.5 with the controllable species replaced
    for 2015..2075."""
    frame = _load_inputs()["emissions_data"].copy()
    frame.loc[SCENARIO_START:END_YEAR, list(CONTROLLABLE)] = np.asarray(controllable_2015_2075, np.float64)
    return frame


def _model_config(emissions_frame) -> dict[str, Any]:
    inputs = _load_inputs()
    return {**inputs, "emissions_data": emissions_frame, **RUN_CONFIG}


def full_results(controllable_2015_2075: np.ndarray) -> dict[str, Any]:
    """A fresh ``CICEROSCM`` instance and a full 1900..2075 ``_run`` (the reference path;
    ~0.2 s): every output ciceroscm gives — temperatures (176,), and ``"concentrations"``,
    ``"forcing"`` frames per component."""
    arr = check_controllable_emissions(controllable_2015_2075)
    if arr.ndim != 2:
        raise ValueError(f"a full run takes one scenario of shape (61, 5), got {arr.shape}")
    CICEROSCM, _ = require_ciceroscm()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = CICEROSCM(_model_config(scenario_frame(arr)))
        model._run({"results_as_dict": True}, pamset_udm=dict(PAMSET_UDM), pamset_emiconc=dict(PAMSET_EMICONC))
    return model.results


def run_full(controllable_2015_2075: np.ndarray) -> np.ndarray:
    """``dT_glob_air`` (176,) float64 of :func:`full_results`."""
    return np.asarray(full_results(controllable_2015_2075)[_OUTPUT], dtype=np.float64).copy()


class CiceroOracle:
    """A persistent CICERO-SCM instance with the 1900..2014 restart snapshot.

    >>> oracle = CiceroOracle()                        # doctest: +SKIP
    >>> T = oracle.run(E)                              # E: (61, 5) for 2015..2075 -> (176,) K
    >>> Ts = oracle.run_batch(Es)                      # (B, 61, 5) -> (B, 176)
    """

    def __init__(self) -> None:
        CICEROSCM, _ = require_ciceroscm()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._model = CICEROSCM(_model_config(_load_inputs()["emissions_data"].copy()))
        thermal_outputs = self._model.thermal_model_class.get_output_dict_thermal()
        self._temperature_key = thermal_outputs[_OUTPUT]
        self._snapshot = self._run_prefix()

    def _run_prefix(self) -> tuple:
        model = self._model
        ce = model.ce_handler
        ce.reset_with_new_pams(dict(PAMSET_EMICONC), None)
        udm = model.thermal_model_class(dict(PAMSET_UDM))
        temperatures = np.zeros(N_YEARS)
        values = self._advance(ce, udm, None, temperatures, range(START_YEAR, SCENARIO_START))
        return copy.deepcopy((ce, udm, values, temperatures))

    def _advance(self, ce, udm, values, temperatures, years) -> dict:
        """The per-year loop of ``CICEROSCM._run``: emissions -> concentrations (with last
        year's temperature feedbacks) -> forcing -> one energy-budget step."""
        model = self._model
        for yr in years:
            i = yr - START_YEAR
            if values is not None and model.feedback_list is not None:
                ce.emi2conc(yr, {key: values.get(key, 0) for key in model.feedback_list})
            else:
                ce.emi2conc(yr)
            _, fn, fs, w_aero = ce.conc2forc(yr, model._rf_luc_arr[i], model._sun_arr[i])
            values = udm.energy_budget([fn, fs, model._volc_n_arr[i], model._volc_s_arr[i]], w_aero, i)
            temperatures[i] = values[self._temperature_key]
        return values

    def run(self, controllable_2015_2075: np.ndarray) -> np.ndarray:
        """``dT_glob_air`` (176,) float64 for one scenario's controllable emissions (61, 5)."""
        arr = check_controllable_emissions(controllable_2015_2075)
        if arr.ndim != 2:
            raise ValueError(f"run takes one scenario of shape (61, 5), got {arr.shape}; use run_batch")
        ce, udm, values, temperatures = copy.deepcopy(self._snapshot)
        frame = ce.emis.copy()
        frame.loc[SCENARIO_START:END_YEAR, list(CONTROLLABLE)] = arr
        ce.emis = frame
        ce._emis_arr = {col: frame[col].to_numpy() for col in frame.columns}  # the handler's hot-path cache
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._advance(ce, udm, values, temperatures, range(SCENARIO_START, END_YEAR + 1))
        return temperatures

    def run_batch(self, controllable: np.ndarray) -> np.ndarray:
        """(B, 61, 5) -> (B, 176), one scenario after another in this process."""
        return _map_scenarios(lambda flat: [self.run(e) for e in flat], controllable)


def _map_scenarios(run_all, controllable: np.ndarray) -> np.ndarray:
    """Validate (..., 61, 5), run ``run_all`` on the flattened scenarios, restore the batch shape."""
    arr = check_controllable_emissions(controllable)
    flat = arr.reshape(-1, N_SCENARIO_YEARS, len(CONTROLLABLE))
    out = np.stack(run_all(list(flat))) if len(flat) else np.zeros((0, N_YEARS))
    return out.reshape(*arr.shape[:-2], N_YEARS)


# --- process pool: one persistent oracle per worker ---------------------------------------------

_WORKER_ORACLE: CiceroOracle | None = None


def _init_worker() -> None:
    global _WORKER_ORACLE
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _WORKER_ORACLE = CiceroOracle()


def _worker_run(controllable: np.ndarray) -> np.ndarray:
    assert _WORKER_ORACLE is not None
    return _WORKER_ORACLE.run(controllable)


class OraclePool:
    """A ``multiprocessing`` pool with one persistent :class:`CiceroOracle` per worker.

    Workers start from a fork server, not by forking this process, so the pool is safe to
    create from a program whose JAX runtime already runs threads. Workers receive only the
    (61, 5) controllable emissions and return ``dT_glob_air``. Use as a context manager;
    ``map`` keeps the input order."""

    def __init__(self, processes: int | None = None):
        require_ciceroscm()
        self.processes = processes or os.cpu_count() or 1
        self._pool = multiprocessing.get_context("forkserver").Pool(self.processes, initializer=_init_worker)

    def map(self, controllable: Sequence[np.ndarray] | np.ndarray, chunksize: int = 4) -> np.ndarray:
        return _map_scenarios(lambda flat: self._pool.map(_worker_run, flat, chunksize=chunksize), controllable)

    def imap(self, controllable: np.ndarray, chunksize: int = 4):
        """Results in input order as they complete (for progress bars)."""
        arr = check_controllable_emissions(controllable)
        return self._pool.imap(_worker_run, list(arr), chunksize=chunksize)

    def close(self) -> None:
        self._pool.terminate()
        self._pool.join()

    def __enter__(self) -> "OraclePool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
