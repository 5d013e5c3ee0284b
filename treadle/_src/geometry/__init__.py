"""Spatial data structures built with Treadle kernels: ``HashGrid``, ``Bvh``, ``Mesh``, ``MarchingCubes``."""
