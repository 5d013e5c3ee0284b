"""Mathematical constants of the reference API (``wp.pi``, ``wp.TAU``, ...), usable in kernels and on the host.

Plain Python floats: in kernels they are weak float literals that take the precision of the expression they appear
in (``wp.float64(x) * wp.pi`` is computed in double precision).
"""

from __future__ import annotations

import math

E = e = math.e
INF = inf = math.inf
LOG2E = log2e = math.log2(math.e)
LOG10E = log10e = math.log10(math.e)
LN2 = ln2 = math.log(2.0)
LN10 = ln10 = math.log(10.0)
NAN = nan = math.nan
PHI = phi = (1.0 + math.sqrt(5.0)) / 2.0
PI = pi = math.pi
HALF_PI = half_pi = math.pi / 2.0
TAU = tau = 2.0 * math.pi

__all__ = ["E", "e", "INF", "inf", "LOG2E", "log2e", "LOG10E", "log10e", "LN2", "ln2", "LN10", "ln10", "NAN", "nan",
           "PHI", "phi", "PI", "pi", "HALF_PI", "half_pi", "TAU", "tau"]
