"""Built-in environments, declared: one list of ids with the ``"module:Class"`` that builds
each, its constructor defaults and its training report, registered with ``make`` when the
package is imported (``import jaxclimate`` does). Nothing of an environment is imported until
its id is made: ``make("ebm-v1")`` imports the EBM only, and listing the ids imports none."""

from __future__ import annotations

from typing import Any, NamedTuple

from jaxclimate.core.registry import register


class EnvSpec(NamedTuple):
    """One registered id: ``entry_point`` ``"module:Class"`` builds it with ``defaults``;
    ``report`` (``"module:Class"``) is how the training CLI presents it (``None``: returns only)."""

    id: str
    entry_point: str
    defaults: dict[str, Any] = {}
    report: str | None = None


_EBM = "jaxclimate.envs.ebm:EBMEnv"
_EBM_REPORT = "jaxclimate.envs.ebm.report:EBMReport"
_CLIMATE = "jaxclimate.envs.climate_mitigation:ClimateMitigation"
_CLIMATE_REPORT = "jaxclimate.envs.climate_mitigation.report:ClimateMitigationReport"
_RICE_N = "jaxclimate.envs.rice_n:RiceN"
_RICE_N_REPORT = "jaxclimate.envs.rice_n.report:RiceNReport"

BUILTIN_ENVS: tuple[EnvSpec, ...] = (
    EnvSpec("ebm-v1", _EBM, {"version": 1}, _EBM_REPORT),
    # 6 agents unless num_agents= is given
    *(
        EnvSpec(f"ebm-v{version}{suffix}", _EBM, {"version": version, **agents}, _EBM_REPORT)
        for version in (2, 3)
        for suffix, agents in (("", {}), ("-a2", {"num_agents": 2}), ("-a6", {"num_agents": 6}))
    ),
    EnvSpec("climate-mitigation", _CLIMATE, {}, _CLIMATE_REPORT),  # scenario="i" unless scenario= is given
    EnvSpec("climate-mitigation-i", _CLIMATE, {"scenario": "i"}, _CLIMATE_REPORT),
    EnvSpec("climate-mitigation-ii", _CLIMATE, {"scenario": "ii"}, _CLIMATE_REPORT),
    # the continuous relaxation: efforts and adaptation spending in their ranges (for --algo apg)
    EnvSpec(
        "climate-mitigation-levers",
        "jaxclimate.envs.climate_mitigation.relaxed:ClimateMitigationLevers",
        {},
        "jaxclimate.envs.climate_mitigation.report:ClimateMitigationLeversReport",
    ),
    EnvSpec("rice-n", _RICE_N, {}, _RICE_N_REPORT),  # protocol="none" unless protocol= is given; regions= for a subset
    EnvSpec("rice-n-bilateral", _RICE_N, {"protocol": "bilateral"}, _RICE_N_REPORT),
    EnvSpec("rice-n-club", _RICE_N, {"protocol": "club"}, _RICE_N_REPORT),
    # the continuous relaxation: savings and mitigation rates in [0, 1], no trade (for --algo apg)
    EnvSpec("rice-n-rates", "jaxclimate.envs.rice_n.relaxed:RiceNRates", {}, "jaxclimate.envs.rice_n.report:RiceNRatesReport"),
    # the paper default (config="exp_default") unless config= is given
    EnvSpec("invest-esg", "jaxclimate.envs.invest_esg:InvestESG", {}, "jaxclimate.envs.invest_esg.report:InvestESGReport"),
)

for _spec in BUILTIN_ENVS:
    register(_spec.id, _spec.entry_point, report=_spec.report, **_spec.defaults)
