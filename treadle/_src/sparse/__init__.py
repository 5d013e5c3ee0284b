"""Block-sparse row (BSR) matrices built from Treadle kernels; the public module is :mod:`treadle.sparse`.

Importing the package registers the matrix operators (:mod:`.operators`), which :mod:`.matrix` delegates to.
"""

from . import operators as operators
