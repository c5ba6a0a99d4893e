"""Learning algorithms: PureJaxRL-style IPPO and its pieces (networks, GAE, PPO loss)."""

from jaxclimate.algos.ippo import IPPOConfig, make_train, make_trainer

__all__ = ["IPPOConfig", "make_train", "make_trainer"]
