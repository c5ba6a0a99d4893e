"""RICE-N: 27-region climate–economy model with trade, tariffs and negotiation (reference behaviour: docs/rice_n.md)."""

from jaxclimate.envs.rice_n.climate import CLIMATE_MODULES
from jaxclimate.envs.rice_n.dynamics import DiceClimate, RiceState
from jaxclimate.envs.rice_n.env import GROUP, RiceN, replay, state_from_record, state_to_record
from jaxclimate.envs.rice_n.params import RiceParams, rice_params
from jaxclimate.envs.rice_n.protocol import Levers, Protocol, register_protocol, registered_protocols, up_to_level

__all__ = [
    "CLIMATE_MODULES",
    "GROUP",
    "Levers",
    "Protocol",
    "ProtocolError",
    "DiceClimate",
    "RiceN",
    "RiceParams",
    "RiceState",
    "register_protocol",
    "registered_protocols",
    "check_protocol",
    "replay",
    "rice_params",
    "state_from_record",
    "state_to_record",
    "up_to_level",
]


def __getattr__(name: str):
    # the checker is imported on first use: `python -m jaxclimate.envs.rice_n.protocol_check`
    # then runs it once, as the command, not a second copy beside the package's
    if name in ("ProtocolError", "check_protocol"):
        from jaxclimate.envs.rice_n import protocol_check

        return getattr(protocol_check, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
