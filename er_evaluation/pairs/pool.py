"""Pools of candidate record pairs: the population the pair samplers draw from.

A :class:`PairPool` is a validated table with one row per unordered candidate pair:
``id_left``, ``id_right``, ``score`` (a similarity, any real scale), ``predicted``
(0/1: the system under evaluation links the pair) and optionally ``label`` (the true
0/1 match status, known only in simulations and benchmarks). The prediction comes
from an explicit 0/1 column or from a clustering: a pair is predicted a match iff
both records share a predicted cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from er_evaluation._parameters import check_beta
from er_evaluation.clustering import _check_one_kind, check_exact_floats, membership, to_pairs
from er_evaluation.errors import ClusteringError, examples, plain_id, warn_undefined
from er_evaluation.vocabulary import pair_metric_names

__all__ = [
    "DEFAULT_MAX_PAIRS",
    "PairPool",
    "PoolError",
    "PoolSizeError",
    "block_sizes",
    "labelling_pool",
    "pool_from_blocks",
    "pool_size_problem",
    "field_similarity_score",
    "predicted_from_clustering",
]


class PoolError(ValueError):
    """Invalid pair pool: unknown ids, self-pairs, duplicate pairs, bad scores or predictions."""


class PoolSizeError(PoolError):
    """The blocks chosen for in-memory pair labelling have more candidate pairs than the limit."""


# Measured (benchmarks/README.md, "Review app: block size on the Pair labelling page"):
# the pairs, Jaccard scores, pool and OASIS sampler of one PatentsView block cost 8.1 s CPU
# and 1.2 GB peak at 2.0M pairs, 33 s and 3.3 GB at 8.0M; blocks of 18M and 41M pairs did
# not fit in 12 GB. 2M pairs keeps a block ready within seconds and a few cached pools
# within a few GB.
DEFAULT_MAX_PAIRS = 2_000_000

API_REMEDY = (
    "Split the block by a second field (pairs of its records that also agree on that "
    "field: split_blocks), or choose smaller blocks; max_pairs=... raises the limit where "
    "the memory allows."
)
"""What :func:`pool_size_problem` suggests to a caller of the library's functions."""


@dataclass(frozen=True)
class PairPool:
    """A validated pool of candidate pairs. Build it with :meth:`PairPool.from_frame`.

    ``pairs`` has columns ``id_left``, ``id_right``, ``score``, ``predicted`` (int8 0/1)
    and optionally ``label`` (int8 0/1). Row position is the pair's index everywhere in
    :mod:`er_evaluation.pairs` (samplers, label logs).
    """

    pairs: pd.DataFrame
    scores: np.ndarray = field(init=False, repr=False, compare=False)
    predicted: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scores", self.pairs["score"].to_numpy(dtype=np.float64))
        object.__setattr__(self, "predicted", self.pairs["predicted"].to_numpy(dtype=np.int8))

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        *,
        score_col: str = "score",
        predicted_col: str | None = "predicted",
        prediction: pd.Series | None = None,
        label_col: str | None = None,
        id_cols: tuple[str, str] = ("id_left", "id_right"),
        records: Sequence | pd.Index | None = None,
    ) -> PairPool:
        """Validate a pair table and build a pool.

        The prediction is either ``frame[predicted_col]`` (0/1) or, when ``prediction``
        (a clustering: record id -> cluster id) is given, 1 iff both records of the pair
        are in the same predicted cluster. ``records`` optionally lists the known record
        ids; pairs naming other ids are an error. Errors (:class:`PoolError`) name the
        offending rows or ids: missing ids, unknown ids, self-pairs, duplicate pairs in
        either order, non-finite scores, predictions or labels other than 0/1.
        """
        if not isinstance(frame, pd.DataFrame):
            raise PoolError(
                f"the pair table must be a pandas DataFrame, got {type(frame).__name__}"
            )
        left_col, right_col = id_cols
        for col in (left_col, right_col, score_col):
            _require_column(frame, col)
        if len(frame) == 0:
            raise PoolError("the pair table is empty: a pool needs at least one candidate pair")
        left = frame[left_col].to_numpy()
        right = frame[right_col].to_numpy()
        _check_ids(left, right, left_col, right_col, records)
        scores = _check_scores(frame[score_col], score_col)
        if prediction is not None:
            predicted = predicted_from_clustering(left, right, prediction)
        else:
            if predicted_col is None:
                raise PoolError(
                    "no prediction: pass predicted_col (a 0/1 column) or prediction (a clustering)"
                )
            _require_column(frame, predicted_col)
            predicted = _check_binary(frame[predicted_col], predicted_col)
        out = pd.DataFrame(
            {"id_left": left, "id_right": right, "score": scores, "predicted": predicted}
        )
        if label_col is not None:
            _require_column(frame, label_col)
            out["label"] = _check_binary(frame[label_col], label_col)
        return cls(out)

    @property
    def n_pairs(self) -> int:
        """Number of candidate pairs N."""
        return len(self.pairs)

    @property
    def labels(self) -> np.ndarray | None:
        """True 0/1 labels if the pool carries them (simulation / benchmark), else None."""
        if "label" not in self.pairs:
            return None
        return self.pairs["label"].to_numpy(dtype=np.int8)

    def with_prediction(
        self,
        predicted: np.ndarray | pd.Series | None = None,
        *,
        prediction: pd.Series | None = None,
    ) -> PairPool:
        """The same pairs and scores with another system's prediction (0/1 array or clustering)."""
        frame = self.pairs.copy()
        if prediction is not None:
            frame["predicted"] = predicted_from_clustering(
                frame["id_left"].to_numpy(), frame["id_right"].to_numpy(), prediction
            )
        elif predicted is not None:
            values = np.asarray(predicted)
            if values.shape != (self.n_pairs,):
                raise PoolError(
                    f"predicted has shape {values.shape}; expected one value per pair ({self.n_pairs})"
                )
            frame["predicted"] = _check_binary(pd.Series(values), "predicted")
        else:
            raise PoolError("pass predicted (0/1 per pair) or prediction (a clustering)")
        return PairPool(frame)

    def truth(self, beta: float = 1.0) -> dict[str, float]:
        """Exact pairwise precision, recall and F_beta of ``predicted`` against ``label``
        on the pool, keyed by the names of :func:`~er_evaluation.vocabulary.pair_metric_names`.

        F_beta = (1 + beta^2) TP / (beta^2 (TP + FN) + TP + FP); beta = 1 is F1.
        """
        beta = check_beta(beta)
        precision, recall, f_beta = pair_metric_names(beta)
        labels = self.labels
        if labels is None:
            raise PoolError("this pool has no label column: the truth is unknown")
        tp = float(np.sum(labels & self.predicted))
        pp = float(self.predicted.sum())
        ap = float(labels.sum())
        alpha = 1.0 / (1.0 + beta * beta)
        return {
            precision: _ratio(tp, pp, precision),
            recall: _ratio(tp, ap, recall),
            f_beta: _ratio(tp, alpha * pp + (1 - alpha) * ap, f_beta),
        }

    def fingerprint(self) -> str:
        """A short hash of ids, scores and predictions, so a label log can check it belongs here."""
        import hashlib

        digest = hashlib.sha256()
        hashed = pd.util.hash_pandas_object(
            self.pairs[["id_left", "id_right", "score", "predicted"]], index=False
        )
        digest.update(hashed.to_numpy().tobytes())
        return digest.hexdigest()[:16]


def _ratio(num: float, den: float, what: str) -> float:
    if den == 0:
        return warn_undefined(what, "zero denominator")
    return num / den


def _require_column(frame: pd.DataFrame, col: str) -> None:
    if col not in frame.columns:
        raise PoolError(f"column {col!r} not found; the table has columns {list(frame.columns)}")


def _check_ids(left, right, left_col: str, right_col: str, records) -> None:
    for values, col in ((left, left_col), (right, right_col)):
        missing = np.flatnonzero(pd.isna(values))
        if len(missing):
            raise PoolError(f"{len(missing)} pairs have a missing {col}: rows {examples(missing)}")
        try:
            check_exact_floats(pd.Index(values), col)
        except ClusteringError as error:
            raise PoolError(str(error)) from None
    kinds = {
        pd.api.types.infer_dtype(left, skipna=False),
        pd.api.types.infer_dtype(right, skipna=False),
    }
    if len(kinds) > 1 and kinds & {"string"} and kinds & {"integer"}:
        raise PoolError(
            f"{left_col} and {right_col} mix integer and string ids ({sorted(kinds)}); "
            "convert them to one type so that 7 and '7' are not silently different records"
        )
    # within a column too, as a clustering's ids: 7 and "7" would be two records
    for values, col in ((left, left_col), (right, right_col)):
        try:
            _check_one_kind(pd.Index(values), f"the ids of column {col!r}")
        except ClusteringError as error:
            raise PoolError(str(error)) from None
    codes, uniques = pd.factorize(np.concatenate([left, right]))
    n = len(left)
    lc, rc = codes[:n].astype(np.int64), codes[n:].astype(np.int64)
    self_rows = np.flatnonzero(lc == rc)
    if len(self_rows):
        raise PoolError(
            f"{len(self_rows)} self-pairs (a record paired with itself) at rows {examples(self_rows)}, "
            f"ids {examples(left[self_rows])}"
        )
    lo, hi = np.minimum(lc, rc), np.maximum(lc, rc)
    key = lo * len(uniques) + hi
    dup = pd.Series(key).duplicated(keep=False).to_numpy()
    if dup.any():
        rows = np.flatnonzero(dup)
        shown = [(left[i], right[i]) for i in rows[:5]]
        raise PoolError(
            f"{len(rows)} rows repeat a pair (in either order), e.g. rows {examples(rows)}: "
            f"{', '.join(f'({plain_id(a)!r}, {plain_id(b)!r})' for a, b in shown)}"
        )
    if records is not None:
        known = pd.Index(records)
        unknown = pd.Index(uniques)[~pd.Index(uniques).isin(known)]
        if len(unknown):
            raise PoolError(
                f"{len(unknown)} record ids in the pairs are not among the records: {examples(unknown)}"
            )


def _check_scores(series: pd.Series, col: str) -> np.ndarray:
    raw = series.to_numpy()
    values = pd.to_numeric(pd.Series(raw), errors="coerce").to_numpy(dtype=np.float64)
    # text that is no number (a CSV cell "abc") is named as such, not as a missing score
    text = np.flatnonzero(np.isnan(values) & ~pd.isna(raw))
    if len(text):
        raise PoolError(
            f"column {col!r} must hold numeric scores; rows {examples(text)} have "
            f"{examples(raw[text])}"
        )
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise PoolError(
            f"{len(bad)} non-finite scores (NaN or infinite) in column {col!r} at rows {examples(bad)}"
        )
    return values


def _check_binary(series: pd.Series, col: str) -> np.ndarray:
    values = series.to_numpy()
    if values.dtype == bool:
        return values.astype(np.int8)
    numeric = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isin(numeric, (0.0, 1.0)))
    if len(bad):
        raise PoolError(
            f"column {col!r} must be 0/1; rows {examples(bad)} have {examples(values[bad])}"
        )
    return numeric.astype(np.int8)


def predicted_from_clustering(left, right, prediction: pd.Series) -> np.ndarray:
    """1 where both records of a pair share a predicted cluster, else 0 (vectorised lookup).

    Every record of every pair must be in the clustering; unknown ids are an error.
    """
    clustering = membership(prediction, name="prediction")
    cluster_codes, _ = pd.factorize(clustering.to_numpy())
    index = clustering.index
    li = index.get_indexer(np.asarray(left))
    ri = index.get_indexer(np.asarray(right))
    unknown = np.concatenate([np.asarray(left)[li < 0], np.asarray(right)[ri < 0]])
    if len(unknown):
        raise PoolError(
            f"{len(pd.unique(unknown))} record ids in the pairs are not in the predicted clustering: "
            f"{examples(pd.unique(unknown))}"
        )
    return (cluster_codes[li] == cluster_codes[ri]).astype(np.int8)


def _block_keys(records: pd.DataFrame, block_col: str, id_col: str | None) -> pd.Series:
    """The block key of every record, indexed by record id; a missing key is an error."""
    if block_col not in records.columns:
        raise PoolError(f"column {block_col!r} not found; the table has {list(records.columns)}")
    ids = records[id_col] if id_col is not None else records.index.to_series()
    blocks = pd.Series(records[block_col].to_numpy(), index=pd.Index(ids.to_numpy()))
    missing = blocks.index[blocks.isna().to_numpy()]
    if len(missing):
        raise PoolError(
            f"{len(missing)} records have no {block_col!r} value: {examples(missing)}; give them a "
            "block key or remove them explicitly"
        )
    return blocks


def block_sizes(
    records: pd.DataFrame,
    block_col: str,
    *,
    id_col: str | None = None,
    max_pairs: int = DEFAULT_MAX_PAIRS,
) -> pd.DataFrame:
    """Records and candidate pairs per block, without building any pair.

    One row per block key (the index, sorted): ``records`` n_b, ``pairs`` C(n_b, 2) =
    n_b (n_b - 1) / 2, the number of within-block pairs :func:`pool_from_blocks` would
    build, and ``too_large``: C(n_b, 2) > ``max_pairs``, the block alone is over the limit
    of in-memory pair labelling (:func:`pool_size_problem` says why). Records with a
    missing block key are an error, as in :func:`pool_from_blocks`.
    """
    limit = _check_max_pairs(max_pairs)
    blocks = _block_keys(records, block_col, id_col)
    counts = blocks.value_counts(sort=False).sort_index().astype(np.int64)
    counts.index.name = block_col
    pairs = counts * (counts - 1) // 2
    return pd.DataFrame({"records": counts, "pairs": pairs, "too_large": pairs > limit})


def _max_records(max_pairs: int) -> int:
    """The largest n with C(n, 2) <= max_pairs (integer arithmetic, exact)."""
    from math import isqrt

    n = (1 + isqrt(1 + 8 * max_pairs)) // 2
    return n if n * (n - 1) // 2 <= max_pairs else n - 1


def _check_max_pairs(max_pairs) -> int:
    if isinstance(max_pairs, bool) or not isinstance(max_pairs, (int, np.integer)):
        raise PoolError(f"max_pairs must be a positive integer, got {max_pairs!r}")
    if max_pairs < 1:
        raise PoolError(f"max_pairs must be a positive integer, got {max_pairs}")
    return int(max_pairs)


def pool_size_problem(
    sizes: pd.DataFrame,
    blocks: Sequence | None = None,
    *,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    remedy: str = API_REMEDY,
) -> str | None:
    """Why the pairs of ``blocks`` are too many for in-memory pair labelling, or None.

    ``sizes`` is :func:`block_sizes`' table; ``blocks`` the chosen block keys (default:
    all). The chosen blocks are too large when their candidate pairs sum_b C(n_b, 2)
    exceed ``max_pairs`` (default :data:`DEFAULT_MAX_PAIRS`, chosen from the measurement
    in benchmarks/README.md). The message names the blocks over the limit on their own
    (or, if none is, the chosen set) with their record and pair counts, the limit, and
    what to do instead: ``remedy``, in the words of the caller's front end (default
    :data:`API_REMEDY`, the library's functions; the CLI names its flags, the app its
    controls). Unknown block keys are an error.
    """
    limit = _check_max_pairs(max_pairs)
    chosen = sizes if blocks is None else _chosen(sizes, blocks)
    total = int(chosen["pairs"].sum())
    if total <= limit:
        return None
    over = chosen[chosen["pairs"] > limit]
    shown = over if len(over) else chosen
    listed = ", ".join(
        f"{plain_id(b)!r} ({n:,} records, {p:,} pair{'s' if p != 1 else ''})"
        for b, n, p in zip(shown.index[:5], shown["records"][:5], shown["pairs"][:5], strict=True)
    )
    if len(shown) > 5:
        listed += f" and {len(shown) - 5} more"
    if len(over) == 1:
        what = f"block {listed} is too large"
    elif len(over):
        what = f"blocks {listed} are too large"
    else:
        what = f"blocks {listed} have {total:,} candidate pairs together, too many"
    return (
        f"{what} for in-memory pair labelling: the limit is {limit:,} candidate pairs, one "
        f"block of at most {_max_records(limit):,} records. Building every pair with its "
        "scores takes about 0.4 GB of memory and 4 s of CPU per million pairs "
        f"(benchmarks/README.md). {remedy}"
    )


def _chosen(sizes: pd.DataFrame, blocks: Sequence) -> pd.DataFrame:
    keys = pd.Index(pd.unique(pd.Series(list(blocks), dtype=object)))
    unknown = keys[~keys.isin(sizes.index)]
    if len(unknown):
        raise PoolError(
            f"{len(unknown)} unknown block keys: {examples(unknown)}; the blocks are "
            f"{examples(sizes.index)}"
        )
    return sizes.loc[keys]


def split_blocks(records: pd.DataFrame, block_col: str, by: str) -> pd.Series:
    """Block keys refined by a second column, for blocks too large to pair whole.

    Each record's key becomes ``"<block> / <value>"``, the value of column ``by`` lower-cased
    with surrounding blanks removed (``"<block> / (no <by>)"`` where it is missing or blank, so
    those records form a sub-block of their own and none is dropped). Pairs of the refined
    keys are the block's pairs that also agree on ``by``: a pool built on them leaves out
    the pairs across sub-blocks, as blocking itself does. Returned aligned with
    ``records``' index; a missing block key is an error.
    """
    blocks = _block_keys(records, block_col, None)  # the column is there, no key missing
    _require_column(records, by)
    value = records[by].astype("string").str.strip().str.lower()
    value = value.mask(value == "").fillna(f"(no {by})")  # a blank cell is a missing value
    keys = blocks.astype("string").array + " / " + value.array
    return pd.Series(keys, index=records.index, dtype=object)


def labelling_pool(
    records: pd.DataFrame,
    block_col: str,
    blocks: Sequence,
    *,
    fields: Sequence[str],
    prediction: pd.Series,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    remedy: str = API_REMEDY,
) -> PairPool:
    """The pool for labelling the pairs of ``blocks``: every within-block pair of their
    records (:func:`pool_from_blocks`), scored by :func:`field_similarity_score` on
    ``fields``, predicted from the clustering ``prediction`` (a pair is predicted a match
    iff both records share a predicted cluster).

    ``records`` is indexed by record id. The sizes are checked first, from counts alone
    (:func:`block_sizes`): if the chosen blocks have more than ``max_pairs`` candidate
    pairs, :class:`PoolSizeError` says which blocks, their record and pair counts, the
    limit and what to do instead (:func:`pool_size_problem`, with ``remedy``), and nothing
    is built.
    """
    sizes = block_sizes(records, block_col)
    problem = pool_size_problem(sizes, blocks, max_pairs=max_pairs, remedy=remedy)
    if problem is not None:
        raise PoolSizeError(problem)
    keys = _chosen(sizes, blocks).index
    members = records[records[block_col].isin(keys).to_numpy()]
    pairs = pool_from_blocks(members, block_col)
    if len(pairs) == 0:
        raise PoolError(
            f"no candidate pair in the blocks {examples(keys)}: a pair needs a block of at "
            "least two records"
        )
    pairs["score"] = field_similarity_score(members, pairs, fields)
    return PairPool.from_frame(pairs, prediction=prediction)


def pool_from_blocks(
    records: pd.DataFrame,
    block_col: str,
    *,
    id_col: str | None = None,
) -> pd.DataFrame:
    """All within-block record pairs of a records table (each unordered pair once).

    ``records`` is indexed by record id (or has ``id_col``); ``block_col`` holds the blocking
    key. Returns ``id_left``, ``id_right``, ``block``. Vectorised through
    :func:`er_evaluation.clustering.to_pairs` on the block membership, so the output size is
    sum_b C(n_b, 2) (:func:`block_sizes` counts it without building anything; the labelling
    workflow, :func:`labelling_pool`, refuses block sets over a pair limit). Records with a
    missing block key are an error (nothing is dropped silently).
    """
    blocks = _block_keys(records, block_col, id_col)
    try:
        blocks = membership(blocks, name="records")
    except ClusteringError as error:
        raise PoolError(str(error)) from None
    pairs = to_pairs(blocks)
    pairs["block"] = blocks.loc[pairs["id_left"]].to_numpy()
    return pairs


def field_similarity_score(
    records: pd.DataFrame,
    pairs: pd.DataFrame,
    fields: Sequence[str],
    *,
    id_cols: tuple[str, str] = ("id_left", "id_right"),
) -> np.ndarray:
    """A simple similarity in [0, 1] for pairs when no matcher score exists.

    Mean over ``fields`` of a per-field similarity: token Jaccard |A ∩ B| / |A ∪ B| of the
    lower-cased whitespace tokens for text fields, exact equality for other types. A value
    missing on either side contributes 0. ``records`` is indexed by record id. Vectorised:
    tokens become a sparse record x token incidence matrix and intersections are row-wise
    products of that matrix.
    """
    from scipy import sparse

    if len(fields) == 0:
        raise PoolError("fields is empty: name at least one column to compare")
    for col in fields:
        if col not in records.columns:
            raise PoolError(f"field {col!r} not found; records have {list(records.columns)}")
    index = records.index
    if index.has_duplicates:
        raise PoolError(
            f"records have duplicate ids: {examples(index[index.duplicated()].unique())}"
        )
    li = index.get_indexer(pairs[id_cols[0]].to_numpy())
    ri = index.get_indexer(pairs[id_cols[1]].to_numpy())
    unknown = np.concatenate(
        [pairs[id_cols[0]].to_numpy()[li < 0], pairs[id_cols[1]].to_numpy()[ri < 0]]
    )
    if len(unknown):
        raise PoolError(
            f"pairs name record ids absent from records: {examples(pd.unique(unknown))}"
        )
    total = np.zeros(len(pairs))
    for col in fields:
        column = records[col]
        if pd.api.types.is_string_dtype(column) or column.dtype == object:
            tokens = column.astype("string").str.lower().str.split().explode().dropna()
            rows = index.get_indexer(tokens.index)
            tok_codes, vocabulary = pd.factorize(tokens.to_numpy())
            incidence = sparse.csr_matrix(
                (np.ones(len(rows)), (rows, tok_codes)), shape=(len(index), max(len(vocabulary), 1))
            )
            incidence.data[:] = 1.0  # repeated tokens count once (sets)
            sizes = np.asarray(incidence.sum(axis=1)).ravel()
            inter = np.asarray(incidence[li].multiply(incidence[ri]).sum(axis=1)).ravel()
            union = sizes[li] + sizes[ri] - inter
            total += np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
        else:
            values = column.to_numpy()
            a, b = values[li], values[ri]
            total += ((a == b) & ~pd.isna(a) & ~pd.isna(b)).astype(float)
    return total / len(fields)
