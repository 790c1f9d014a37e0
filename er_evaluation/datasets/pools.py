"""The bundled record-pair pools of the OASIS papers (abt-buy, dblp-acm, restaurant).

Each is a :class:`~er_evaluation.pairs.PairPool` with complete truth (``label``), the
authors' SVM decision as ``predicted`` and the calibrated probability (default) or the
SVM margin as ``score``. Provenance: ``data/pools/PROVENANCE.md``.
"""

from __future__ import annotations

from importlib import resources

import numpy as np
import pandas as pd

from er_evaluation.pairs.pool import PairPool

__all__ = ["POOLS", "load_pool", "load_pool_frame"]

POOLS: dict[str, str] = {
    "abt-buy": "abt-buy-svm.parquet",
    "dblp-acm": "dblp-acm-svm-small.parquet",
    "restaurant": "restaurant-svm.parquet",
}
"""Pool names and their files."""


def load_pool_frame(name: str) -> pd.DataFrame:
    """The raw pair table of pool ``name`` (one of :data:`POOLS`), ids synthesised as
    ``L<row>``/``R<row>`` where the source has none."""
    if name not in POOLS:
        raise ValueError(f"unknown pool {name!r}; choose one of {', '.join(POOLS)}")
    with resources.as_file(
        resources.files(__package__).joinpath("data", "pools", POOLS[name])
    ) as path:
        frame = pd.read_parquet(path)
    if "id_left" not in frame.columns:
        rows = np.arange(len(frame)).astype(str)
        frame.insert(0, "id_left", np.char.add("L", rows).astype(object))
        frame.insert(1, "id_right", np.char.add("R", rows).astype(object))
    return frame


def load_pool(name: str, *, score: str = "probability") -> PairPool:
    """Pool ``name`` ("abt-buy", "dblp-acm", "restaurant") as a validated PairPool with its
    true labels. The restaurant source lists 14,809 pairs in both orders (same score,
    prediction and label); the pool keeps the first occurrence of each unordered pair
    (134,938 pairs, 42 true matches), as a pool of unordered pairs must. ``score`` picks the ``"probability"`` (calibrated, default) or the SVM
    margin ``"score"`` column as the pool's score."""
    if score not in ("probability", "score"):
        raise ValueError(f"score must be 'probability' or 'score', got {score!r}")
    frame = load_pool_frame(name)
    if name == "restaurant":
        frame = _drop_reversed_repeats(frame)
    return PairPool.from_frame(frame, score_col=score, predicted_col="predicted", label_col="label")


def _drop_reversed_repeats(frame: pd.DataFrame) -> pd.DataFrame:
    left, right = frame["id_left"].to_numpy(), frame["id_right"].to_numpy()
    key = pd.DataFrame({"lo": np.minimum(left, right), "hi": np.maximum(left, right)})
    return frame.loc[~key.duplicated().to_numpy()].reset_index(drop=True)
