"""Cove in Harbor: ``cove_harbor:CoveAgent`` (Cove as the agent of a trial) and ``cove_harbor:CoveEnvironment`` (a Cove sandbox as its environment)."""

from cove_harbor.agent import CoveAgent
from cove_harbor.environment import CoveEnvironment

__all__ = ["CoveAgent", "CoveEnvironment"]
