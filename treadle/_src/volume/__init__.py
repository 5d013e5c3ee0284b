"""Sparse volumes in NanoVDB's layout: the format (``nanovdb``), grid building (``build``) and ``Volume``."""
