"""Block-sparse row (BSR) matrices built from Treadle kernels; the public module is :mod:`treadle.sparse`."""
