"""RICE-N: 27-region climate–economy model with trade, tariffs and negotiation (reference behaviour: docs/rice_n.md)."""

from jaxclimate.envs.rice_n.climate import CLIMATE_MODULES
from jaxclimate.envs.rice_n.dynamics import DiceClimate, RiceState
from jaxclimate.envs.rice_n.env import GROUP, RiceN, replay, state_from_record, state_to_record
from jaxclimate.envs.rice_n.params import RiceParams, rice_params
from jaxclimate.envs.rice_n.protocol import Levers, Protocol, register_protocol, registered_protocols, up_to_level
from jaxclimate.envs.rice_n.protocol_check import ProtocolError, check_protocol

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
