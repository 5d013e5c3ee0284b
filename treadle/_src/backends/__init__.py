"""Backends build, load and launch kernel instances: ``cpu/``, ``cuda/``, ``interpret/``; shared argument packing."""
