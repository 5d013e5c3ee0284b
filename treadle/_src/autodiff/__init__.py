"""Automatic differentiation on top of the launch front: ``Tape``, gradient checks and Jacobians."""
