"""Finite-element helpers for example programs (``warp.examples.fem`` under the Warp alias)."""
