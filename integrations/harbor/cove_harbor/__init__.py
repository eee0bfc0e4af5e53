"""Cove in Harbor: ``cove_harbor:CoveAgent`` (Cove as the agent of a trial)."""

from cove_harbor.agent import CoveAgent

__all__ = ["CoveAgent"]
