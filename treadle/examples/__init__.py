"""Runnable examples: ``python -m treadle.examples.<name>``."""
