"""Built-in environments; importing this package registers their ids with ``make``."""

from jaxclimate.core.registry import register
from jaxclimate.envs.ebm import EBMEnv

register("ebm-v1", EBMEnv, version=1)
for _version in (2, 3):
    register(f"ebm-v{_version}", EBMEnv, version=_version)  # 6 agents unless num_agents= is given
    for _n in (2, 6):
        register(f"ebm-v{_version}-a{_n}", EBMEnv, version=_version, num_agents=_n)

from jaxclimate.envs.climate_mitigation import ClimateMitigation  # noqa: E402

register("climate-mitigation", ClimateMitigation)  # scenario="i" unless scenario= is given
register("climate-mitigation-i", ClimateMitigation, scenario="i")
register("climate-mitigation-ii", ClimateMitigation, scenario="ii")

from jaxclimate.envs.rice_n import RiceN  # noqa: E402

register("rice-n", RiceN)  # protocol="none" unless protocol= is given; regions= for a subset
register("rice-n-bilateral", RiceN, protocol="bilateral")
register("rice-n-club", RiceN, protocol="club")

from jaxclimate.envs.invest_esg import InvestESG  # noqa: E402

register("invest-esg", InvestESG)  # the paper default (config="exp_default") unless config= is given
