"""Textures: regularly gridded 1-3d data with filtering, addressing and mipmaps, sampled in kernels."""
