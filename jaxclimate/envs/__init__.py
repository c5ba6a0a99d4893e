"""Built-in environments; importing this package registers their ids with ``make``."""

from jaxclimate.core.registry import register
from jaxclimate.envs.ebm import EBMEnv

# each id with the training report the CLI presents it with (imported by jaxclimate.reporting only)
_EBM = "jaxclimate.envs.ebm.report:EBMReport"
register("ebm-v1", EBMEnv, report=_EBM, version=1)
for _version in (2, 3):
    register(f"ebm-v{_version}", EBMEnv, report=_EBM, version=_version)  # 6 agents unless num_agents= is given
    for _n in (2, 6):
        register(f"ebm-v{_version}-a{_n}", EBMEnv, report=_EBM, version=_version, num_agents=_n)

from jaxclimate.envs.climate_mitigation import ClimateMitigation  # noqa: E402

_CLIMATE = "jaxclimate.envs.climate_mitigation.report:ClimateMitigationReport"
register("climate-mitigation", ClimateMitigation, report=_CLIMATE)  # scenario="i" unless scenario= is given
register("climate-mitigation-i", ClimateMitigation, report=_CLIMATE, scenario="i")
register("climate-mitigation-ii", ClimateMitigation, report=_CLIMATE, scenario="ii")
from jaxclimate.envs.climate_mitigation.relaxed import ClimateMitigationLevers  # noqa: E402

# the continuous relaxation: efforts and adaptation spending in their ranges (for --algo apg)
register(
    "climate-mitigation-levers", ClimateMitigationLevers, report="jaxclimate.envs.climate_mitigation.report:ClimateMitigationLeversReport"
)  # scenario="i" unless scenario= is given

from jaxclimate.envs.rice_n import RiceN  # noqa: E402

_RICE_N = "jaxclimate.envs.rice_n.report:RiceNReport"
register("rice-n", RiceN, report=_RICE_N)  # protocol="none" unless protocol= is given; regions= for a subset
register("rice-n-bilateral", RiceN, report=_RICE_N, protocol="bilateral")
register("rice-n-club", RiceN, report=_RICE_N, protocol="club")
from jaxclimate.envs.rice_n.relaxed import RiceNRates  # noqa: E402

# the continuous relaxation: savings and mitigation rates in [0, 1], no trade (for --algo apg)
register("rice-n-rates", RiceNRates, report="jaxclimate.envs.rice_n.report:RiceNRatesReport")

from jaxclimate.envs.invest_esg import InvestESG  # noqa: E402

register(
    "invest-esg", InvestESG, report="jaxclimate.envs.invest_esg.report:InvestESGReport"
)  # the paper default (config="exp_default") unless config= is given
