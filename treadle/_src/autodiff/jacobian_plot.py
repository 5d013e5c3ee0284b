"""``jacobian_plot``: all Jacobians of a kernel or function in one image grid (needs matplotlib)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError(
            "jacobian_plot() (and the plot_* options of treadle.autograd) need the matplotlib package, which is not "
            "installed; install it with 'pip install matplotlib'"
        ) from e
    return plt


def jacobian_plot(jacobians: dict[tuple[int, int], Any], kernel: Any, inputs: Sequence[Any] | None = None,
                  show_plot: bool = True, show_colorbar: bool = True, scale_colors_per_submatrix: bool = False,
                  title: str | None = None, colormap: str = "coolwarm", log_scale: bool = False) -> Any:
    """Show the Jacobians computed by :func:`jacobian` or :func:`jacobian_fd` in one combined image plot.

    Args:
        jacobians: ``{(input index, output index): jacobian}``.
        kernel: the kernel (then ``inputs`` is required) or a ``FunctionMetadata`` with the labels.
        inputs: the inputs the Jacobians were computed for (when ``kernel`` is a kernel).
        show_plot: call ``plt.show()``.
        show_colorbar: add a colorbar (one per submatrix when ``scale_colors_per_submatrix``).
        scale_colors_per_submatrix: scale colors per submatrix instead of over all Jacobians.
        title: the figure title.
        colormap: a matplotlib colormap name.
        log_scale: a symmetric logarithmic color scale.

    Returns:
        The matplotlib figure.

    Raises:
        ImportError: matplotlib is not installed.
    """
    plt = _pyplot()
    from matplotlib import colors

    from .gradcheck import FunctionMetadata

    if isinstance(kernel, FunctionMetadata):
        meta = kernel
    else:
        if inputs is None:
            raise ValueError("jacobian_plot() needs the inputs when given a kernel")
        meta = FunctionMetadata()
        meta.update_from_kernel(kernel, inputs)

    in_ids = sorted({i for i, _ in jacobians})
    out_ids = sorted({j for _, j in jacobians})
    mats = {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v, dtype=np.float64) for k, v in jacobians.items()}
    mats = {k: m.reshape(m.shape[0], -1) for k, m in mats.items()}
    widths = [max(m.shape[1] for (i, _), m in mats.items() if i == ii) for ii in in_ids]
    heights = [max(m.shape[0] for (_, j), m in mats.items() if j == jj) for jj in out_ids]
    if not mats:
        fig = plt.figure()
        if title:
            fig.suptitle(title)
        if show_plot:
            plt.show()
        return fig

    finite = [m[np.isfinite(m)] for m in mats.values()]
    allv = np.concatenate(finite) if finite else np.zeros(1)
    vmin, vmax = (float(allv.min()), float(allv.max())) if allv.size else (0.0, 1.0)

    def norm(lo: float, hi: float) -> Any:
        if log_scale:
            lim = max(abs(lo), abs(hi), 1e-12)
            return colors.SymLogNorm(linthresh=max(lim * 1e-3, 1e-12), vmin=-lim, vmax=lim)
        if lo == hi:
            lo, hi = lo - 1.0, hi + 1.0
        return colors.Normalize(vmin=lo, vmax=hi)

    fig, axes = plt.subplots(len(out_ids), len(in_ids), squeeze=False,
                             gridspec_kw={"width_ratios": widths, "height_ratios": heights},
                             figsize=(min(3 + 0.3 * sum(widths), 20), min(2 + 0.3 * sum(heights), 20)))
    image = None
    for r, j in enumerate(out_ids):
        for c, i in enumerate(in_ids):
            ax = axes[r][c]
            m = mats.get((i, j))
            if m is None:
                ax.axis("off")
                continue
            if scale_colors_per_submatrix:
                fin = m[np.isfinite(m)]
                n = norm(float(fin.min()), float(fin.max())) if fin.size else norm(0.0, 1.0)
            else:
                n = norm(vmin, vmax)
            image = ax.imshow(np.ma.masked_invalid(m), cmap=colormap, norm=n, interpolation="nearest",
                              aspect="auto")
            if r == 0:
                ax.set_title(meta.input_labels[i] if i < len(meta.input_labels) else f"input_{i}")
            if c == 0:
                ax.set_ylabel(meta.output_labels[j] if j < len(meta.output_labels) else f"output_{j}")
            if show_colorbar and scale_colors_per_submatrix:
                fig.colorbar(image, ax=ax)
    if show_colorbar and not scale_colors_per_submatrix and image is not None:
        fig.colorbar(image, ax=axes.ravel().tolist())
    if title:
        fig.suptitle(title)
    if show_plot:
        plt.show()
    return fig
