"""Gradient-descent optimizers over Treadle arrays: :class:`Adam` and :class:`SGD`.

Each optimizer holds a list of parameter arrays (any float, float16, vector or matrix dtype) and updates them in
place from a list of gradient arrays of the same shapes, e.g. ``opt.step([tape.gradients[p] for p in params])``.
Moment/velocity buffers are float32 (float64 for float64 parameters) arrays shaped like the parameters. The update
runs on the host through NumPy views of CPU arrays (copies for device arrays).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import treadle as wp

__all__ = ["SGD", "Adam"]


def _state_dtype(param: Any) -> Any:
    """The dtype of a moment buffer for ``param``: its own dtype, with float16 components widened to float32."""
    dt = param.dtype
    if dt is wp.float16:
        return wp.float32
    scalar = getattr(dt, "_wp_scalar_type_", None)
    if scalar is wp.float16:
        length = getattr(dt, "_length_", None)
        shape = getattr(dt, "_shape_", None)
        if shape is not None and len(shape) == 2:
            return wp.types.matrix(shape=tuple(shape), dtype=wp.float32)
        return wp.types.vector(length=int(length or 0), dtype=wp.float32)
    return dt


def _host(a: Any) -> tuple[np.ndarray, bool]:
    """``(values as float array, is a live view)`` of an array."""
    view = a.device.is_cpu
    v = a.numpy()
    return v, view


def _write(a: Any, values: np.ndarray, host: np.ndarray, is_view: bool) -> None:
    if is_view:
        host[...] = values.astype(host.dtype, copy=False).reshape(host.shape)
    else:
        a.assign(values.astype(host.dtype, copy=False).reshape(host.shape))


class _Optimizer:
    def __init__(self, params: list[Any] | None) -> None:
        self.params: list[Any] = []
        self._states: list[list[Any]] = []
        if params is not None:
            self.set_params(params)

    def _state_names(self) -> list[str]:
        raise NotImplementedError

    def set_params(self, params: list[Any]) -> None:
        """Use ``params`` from now on.

        Buffers of compatible parameters (same shape and dtype) are kept (moved to the new parameter's device when
        it changed); the others are created zeroed.
        """
        old = dict(zip(self._state_names(), self._states)) if self._states else {}
        states: list[list[Any]] = []
        for name in self._state_names():
            prev = old.get(name, [])
            bufs = []
            for k, p in enumerate(params):
                dt = _state_dtype(p)
                b = prev[k] if k < len(prev) else None
                if b is not None and tuple(b.shape) == tuple(p.shape) and b.dtype == dt:
                    if b.device != p.device:
                        b = b.to(p.device)
                    bufs.append(b)
                else:
                    bufs.append(wp.zeros(p.shape, dtype=dt, device=p.device))
            states.append(bufs)
        self.params = list(params)
        self._states = states
        for name, bufs in zip(self._state_names(), states):
            setattr(self, name, bufs)

    def reset_internal_state(self) -> None:
        """Zero the optimizer's buffers (and its step count)."""
        for bufs in self._states:
            for b in bufs:
                b.zero_()
        self.t = 0

    def _check(self, grad: list[Any]) -> None:
        if len(grad) != len(self.params):
            raise ValueError(f"step() got {len(grad)} gradient(s) for {len(self.params)} parameter array(s)")
        for p, g in zip(self.params, grad):
            if g is None or tuple(g.shape) != tuple(p.shape):
                raise ValueError(f"a gradient of shape {None if g is None else g.shape} does not match its "
                                 f"parameter of shape {p.shape}")


class Adam(_Optimizer):
    """Adam (Kingma & Ba).

    ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``, ``p -= lr * m_hat / (sqrt(v_hat) + eps)`` with the
    bias-corrected moments ``m_hat = m / (1 - b1^t)``, ``v_hat = v / (1 - b2^t)``.
    """

    def __init__(self, params: list[Any] | None = None, lr: float = 0.001, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-08) -> None:
        self.lr = lr
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.t = 0
        self.m: list[Any] = []
        self.v: list[Any] = []
        super().__init__(params)

    def _state_names(self) -> list[str]:
        return ["m", "v"]

    def step(self, grad: list[Any]) -> None:
        """One update of every parameter from its gradient."""
        self._check(grad)
        self.t += 1
        b1, b2 = self.beta1, self.beta2
        c1, c2 = 1.0 - b1**self.t, 1.0 - b2**self.t
        for p, g, m, v in zip(self.params, grad, self.m, self.v):
            gh = np.asarray(g.numpy(), dtype=np.float64)
            mh, m_view = _host(m)
            vh, v_view = _host(v)
            m_new = b1 * mh + (1.0 - b1) * gh
            v_new = b2 * vh + (1.0 - b2) * gh * gh
            _write(m, m_new, mh, m_view)
            _write(v, v_new, vh, v_view)
            ph, p_view = _host(p)
            upd = self.lr * (m_new / c1) / (np.sqrt(v_new / c2) + self.eps)
            _write(p, ph.astype(np.float64) - upd, ph, p_view)


class SGD(_Optimizer):
    """Stochastic gradient descent with optional momentum, dampening, weight decay and Nesterov momentum."""

    def __init__(self, params: list[Any] | None = None, lr: float = 0.001, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False) -> None:
        if nesterov and (momentum <= 0.0 or dampening != 0.0):
            raise ValueError("Nesterov momentum needs a positive momentum and zero dampening")
        self.lr = lr
        self.momentum = momentum
        self.dampening = dampening
        self.weight_decay = weight_decay
        self.nesterov = nesterov
        self.t = 0
        self.b: list[Any] = []
        super().__init__(params)

    def _state_names(self) -> list[str]:
        return ["b"]

    def step(self, grad: list[Any]) -> None:
        """One update of every parameter from its gradient."""
        self._check(grad)
        for p, g, b in zip(self.params, grad, self.b):
            ph, p_view = _host(p)
            d = np.asarray(g.numpy(), dtype=np.float64)
            if self.weight_decay:
                d = d + self.weight_decay * ph
            if self.momentum:
                bh, b_view = _host(b)
                b_new = d if self.t == 0 else self.momentum * bh + (1.0 - self.dampening) * d
                _write(b, b_new, bh, b_view)
                d = d + self.momentum * b_new if self.nesterov else b_new
            _write(p, ph.astype(np.float64) - self.lr * d, ph, p_view)
        self.t += 1
