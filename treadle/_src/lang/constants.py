"""Mathematical constants of the reference API (``wp.pi``, ``wp.TAU``, ...), usable in kernels and on the host.

Plain Python floats: in kernels they are weak float literals that take the precision of the expression they appear
in (``wp.float64(x) * wp.pi`` is computed in double precision).
"""

from __future__ import annotations

import math

#: Euler's number e = 2.71828...
E = e = math.e
#: Positive infinity.
INF = inf = math.inf
#: log2(e) = 1.44269...
LOG2E = log2e = math.log2(math.e)
#: log10(e) = 0.43429...
LOG10E = log10e = math.log10(math.e)
#: ln(2) = 0.69314...
LN2 = ln2 = math.log(2.0)
#: ln(10) = 2.30258...
LN10 = ln10 = math.log(10.0)
#: Not a number (a quiet NaN).
NAN = nan = math.nan
#: The golden ratio (1 + sqrt(5)) / 2 = 1.61803...
PHI = phi = (1.0 + math.sqrt(5.0)) / 2.0
#: pi = 3.14159...
PI = pi = math.pi
#: pi / 2.
HALF_PI = half_pi = math.pi / 2.0
#: tau = 2 pi = 6.28318...
TAU = tau = 2.0 * math.pi

__all__ = ["E", "e", "INF", "inf", "LOG2E", "log2e", "LOG10E", "log10e", "LN2", "ln2", "LN10", "ln10", "NAN", "nan",
           "PHI", "phi", "PI", "pi", "HALF_PI", "half_pi", "TAU", "tau"]
