"""One-dimensional point families: quadrature rules and the nodes of Lagrange interpolation on ``[0, 1]``."""

import enum
import functools

import numpy as np


class Polynomial(enum.Enum):
    """A family of points on ``[0, 1]``, used as quadrature points and as interpolation nodes.

    Attributes:
        GAUSS_LEGENDRE: Gauss-Legendre points (interior; exact up to degree ``2n - 1``).
        LOBATTO_GAUSS_LEGENDRE: Gauss-Lobatto-Legendre points (both end points included; exact up to ``2n - 3``).
        EQUISPACED_CLOSED: equally spaced points including both end points (closed Newton-Cotes weights).
        EQUISPACED_OPEN: equally spaced interior points ``(i + 1) / (n + 1)`` (open Newton-Cotes weights).

    """

    GAUSS_LEGENDRE = "GL"
    LOBATTO_GAUSS_LEGENDRE = "LGL"
    EQUISPACED_CLOSED = "closed"
    EQUISPACED_OPEN = "open"


def is_closed(family: Polynomial) -> bool:
    """Whether the family's points include both end points of the interval."""
    return family in (Polynomial.LOBATTO_GAUSS_LEGENDRE, Polynomial.EQUISPACED_CLOSED)


def _newton_cotes_weights(points: np.ndarray) -> np.ndarray:
    """Weights on ``[0, 1]`` integrating exactly the polynomials of degree ``< len(points)`` (a Vandermonde solve)."""
    n = len(points)
    vander = np.vander(points, n, increasing=True).T  # row k: points**k
    moments = 1.0 / np.arange(1, n + 1)
    return np.linalg.solve(vander, moments)


def _lobatto(n: int) -> tuple[np.ndarray, np.ndarray]:
    if n < 2:
        raise ValueError("Gauss-Lobatto-Legendre rules need at least 2 points")
    # interior points: roots of P'_{n-1}; weights 2 / (n (n - 1) P_{n-1}(x)^2) on [-1, 1]
    leg = np.polynomial.legendre.Legendre.basis(n - 1)
    inner = np.sort(np.real(leg.deriv().roots())) if n > 2 else np.zeros(0)
    x = np.concatenate([[-1.0], inner, [1.0]])
    w = 2.0 / (n * (n - 1) * leg(x) ** 2)
    return 0.5 * (x + 1.0), 0.5 * w


@functools.cache
def _rule(point_count: int, family: Polynomial) -> tuple[tuple[float, ...], tuple[float, ...]]:
    n = int(point_count)
    if n < 1:
        raise ValueError(f"a quadrature rule needs at least one point, got {point_count}")
    if family == Polynomial.GAUSS_LEGENDRE:
        x, w = np.polynomial.legendre.leggauss(n)
        x, w = 0.5 * (x + 1.0), 0.5 * w
    elif family == Polynomial.LOBATTO_GAUSS_LEGENDRE:
        if n == 1:
            x, w = np.array([0.5]), np.array([1.0])
        else:
            x, w = _lobatto(n)
    elif family == Polynomial.EQUISPACED_CLOSED:
        x = np.array([0.5]) if n == 1 else np.linspace(0.0, 1.0, n)
        w = _newton_cotes_weights(x)
    elif family == Polynomial.EQUISPACED_OPEN:
        x = (np.arange(n) + 1.0) / (n + 1.0)
        w = _newton_cotes_weights(x)
    else:
        raise TypeError(f"unknown polynomial family {family!r}")
    return tuple(float(v) for v in x), tuple(float(v) for v in w)


def quadrature_1d(point_count: int, family: Polynomial) -> tuple[np.ndarray, np.ndarray]:
    """Points and weights of a one-dimensional rule on ``[0, 1]``.

    Args:
        point_count: number of points.
        family: which points (:class:`Polynomial`).

    Returns:
        ``(coords, weights)``: two float64 NumPy arrays of ``point_count`` entries, points in increasing order.

    """
    x, w = _rule(point_count, Polynomial(family))
    return np.array(x), np.array(w)


def lagrange_scales(coords: np.ndarray) -> np.ndarray:
    """The normalisation factors ``1 / prod_{j != i} (x_i - x_j)`` of the Lagrange polynomials on ``coords``.

    Args:
        coords: the interpolation nodes (distinct).

    Returns:
        A float64 array with one factor per node.

    """
    x = np.asarray(coords, dtype=np.float64)
    diff = x[:, None] - x[None, :]
    np.fill_diagonal(diff, 1.0)
    prod = np.prod(diff, axis=1)
    if np.any(prod == 0.0):
        raise ValueError("lagrange_scales: the nodes must be distinct")
    return 1.0 / prod


def exactness_degree(point_count: int, family: Polynomial) -> int:
    """The highest polynomial degree a rule of this family and size integrates exactly."""
    n = int(point_count)
    if family == Polynomial.GAUSS_LEGENDRE:
        return 2 * n - 1
    if family == Polynomial.LOBATTO_GAUSS_LEGENDRE:
        return max(2 * n - 3, 1)
    # Newton-Cotes: n points integrate degree n - 1, and degree n when n is odd (symmetry)
    return n if n % 2 == 1 else n - 1


def points_for_order(order: int, family: Polynomial) -> int:
    """The fewest points of ``family`` that integrate polynomials of degree ``order`` exactly."""
    n = 1
    while exactness_degree(n, family) < order:
        n += 1
    return n
