"""Every static figure the chapters show.

Functions take data (tensors, arrays, dicts of numbers) and return a ``matplotlib.figure.Figure``;
they never train. Labels in plain words; diverging colour maps centred at zero for signed weights.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure


def to_numpy(x) -> np.ndarray:
    """A CPU float NumPy array from a tensor, array or list."""
    if isinstance(x, torch.Tensor):
        return x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=float)


def signed_heatmap(ax, values, *, title: str = "", xlabel: str = "", ylabel: str = "", colorbar: bool = True):
    """Draw a 2-D array with a red/blue map centred at zero; returns the image."""
    v = to_numpy(values)
    bound = float(np.abs(v).max()) or 1.0
    im = ax.imshow(v, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -bound, bound), aspect="auto", interpolation="nearest")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return im


def new_figure(ncols: int = 1, nrows: int = 1, width: float = 5.0, height: float = 3.6, **kwargs) -> tuple[Figure, np.ndarray]:
    """A figure with a grid of axes (always returned as a 2-D array), sized per panel."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kwargs)
    return fig, axes


# ---------------------------------------------------------------------------------------------
# Out-of-context reasoning (chapters 1-4)
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Induction heads (chapters 5-7)
# ---------------------------------------------------------------------------------------------
