"""Optimisation algorithms built on Treadle kernels; the iterative linear solvers live in :mod:`.linear`."""
