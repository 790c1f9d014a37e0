"""Integer codes of combinations of keys, for grouped counts (blocks, subgroups)."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["combine_codes"]


def combine_codes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Compact codes (0..k-1, in order of first appearance) of the pairs ``(a[i], b[i])``
    of non-negative integer codes: equal codes iff equal pairs. Compacting after each
    combination keeps the keys below ``len(a)²``, so chains of combinations never
    overflow int64."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    return pd.factorize(a * (int(b.max(initial=0)) + 1) + b)[0]
