"""Real datasets bundled with the package, loadable offline with one call each.

- PatentsView inventor mentions, 15 disambiguation versions (2017-08-08 to 2022-06-30)
  and the hand-reviewed inventor benchmark of Binette et al. (2022). CC BY 4.0.
- RLdata500 and RLdata10000 (synthetic person records with 10% duplicates) from the
  R package RecordLinkage. GPL-3.

Provenance and licences: ``data/patentsview/PROVENANCE.md`` and
``data/rldata/PROVENANCE.md`` next to this module.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources

import pandas as pd

from er_evaluation.datasets.pools import POOLS, load_pool  # noqa: F401 (pair pools)

__all__ = [
    "PATENTSVIEW_VERSIONS",
    "load_patentsview_mentions",
    "load_patentsview_predictions",
    "load_patentsview_benchmark",
    "load_rldata500",
    "load_rldata10000",
]

_PREFIX = "disamb_inventor_id_"

PATENTSVIEW_VERSIONS: tuple[str, ...] = (
    "2017-08-08",
    "2017-10-03",
    "2017-12-26",
    "2018-05-28",
    "2018-11-27",
    "2019-03-12",
    "2019-08-20",
    "2019-10-08",
    "2019-12-31",
    "2020-03-31",
    "2020-06-30",
    "2020-09-29",
    "2020-12-29",
    "2021-12-30",
    "2022-06-30",
)
"""The PatentsView disambiguation versions in the bundled data, oldest first."""


def _path(*parts: str):
    return resources.files(__name__).joinpath("data", *parts)


def _read_parquet(*parts: str, columns: list[str] | None = None) -> pd.DataFrame:
    with resources.as_file(_path(*parts)) as path:
        return pd.read_parquet(path, columns=columns)


def load_patentsview_mentions() -> pd.DataFrame:
    """The 133,541 PatentsView inventor mentions, indexed by ``mention_id``.

    ``mention_id`` is ``US<patent>-<inventor sequence>``. Columns: ``block`` (first two
    letters of the first name + last name), ``patent_id``, ``inventor_sequence``,
    ``name_first``, ``name_last``, ``city``, ``state``, ``country``, ``patent_date``,
    ``filing_date``, ``patent_title``, ``assignees``, ``cpc_subclasses``,
    ``coinventors`` (``"; "``-joined). The mentions are the name blocks of the
    benchmark's inventors, not all of PatentsView.
    """
    return _read_parquet("patentsview", "mentions.parquet").set_index("mention_id")


def load_patentsview_predictions(
    versions: Iterable[str] | None = None,
) -> dict[str, pd.Series]:
    """PatentsView's inventor disambiguations, one membership vector per version.

    Returns ``{version date: Series}`` (e.g. ``"2021-12-30"``), oldest first, each
    indexed by ``mention_id`` with inventor ids as values. Each version is restricted
    to **its own population**: the mentions of patents granted up to that release
    (the non-null entries of its column), so versions cover different record sets
    (84,749 mentions in 2017-08-08 up to all 133,541 in 2022-06-30). Compare two
    versions on their shared mentions with ``on_missing="restrict"``.

    ``versions`` selects a subset of :data:`PATENTSVIEW_VERSIONS`.
    """
    wanted = list(PATENTSVIEW_VERSIONS if versions is None else versions)
    unknown = [v for v in wanted if v not in PATENTSVIEW_VERSIONS]
    if unknown:
        raise ValueError(
            f"unknown PatentsView version(s) {unknown}; available: {', '.join(PATENTSVIEW_VERSIONS)}"
        )
    columns = [_PREFIX + v.replace("-", "") for v in wanted]
    table = _read_parquet(
        "patentsview", "predictions.parquet", columns=["mention_id", *columns]
    ).set_index("mention_id")
    result = {}
    for version, column in zip(wanted, columns, strict=True):
        values = table[column]
        result[version] = values[values.notna()].rename(version)
    return result


def load_patentsview_benchmark() -> pd.Series:
    """The hand-reviewed PatentsView inventor benchmark (Binette et al. 2022).

    A membership vector ``mention_id -> unique_id`` over 13,467 mentions in 401 true
    inventor clusters. Inventors were sampled through mentions drawn uniformly at
    random, i.e. with probability proportional to their number of mentions.
    """
    table = _read_parquet("patentsview", "reference.parquet")
    return pd.Series(
        table["unique_id"].to_numpy(),
        index=pd.Index(table["mention_id"].to_numpy(), name="mention_id"),
        name="unique_id",
    )


def _load_rldata(size: int) -> tuple[pd.DataFrame, pd.Series]:
    with resources.as_file(_path("rldata", f"RLdata{size}.tsv")) as path:
        records = pd.read_csv(path, sep="\t", na_values=["NA"], keep_default_na=False)
    with resources.as_file(_path("rldata", f"identity.RLdata{size}.tsv")) as path:
        identity = pd.read_csv(path, sep="\t").iloc[:, 0]
    records.index = pd.RangeIndex(len(records), name="record_id")
    truth = pd.Series(identity.to_numpy(), index=records.index, name="entity_id")
    return records, truth


def load_rldata500() -> tuple[pd.DataFrame, pd.Series]:
    """RLdata500: ``(records, truth)``.

    ``records`` has 500 rows indexed by ``record_id`` 0..499 (row order of the R data)
    with columns ``fname_c1``, ``fname_c2``, ``lname_c1``, ``lname_c2`` (NaN when
    absent), ``by``, ``bm``, ``bd`` (birth year, month, day); ``truth`` is the true
    membership vector ``record_id -> entity id`` (10% of records are duplicates).
    """
    return _load_rldata(500)


def load_rldata10000() -> tuple[pd.DataFrame, pd.Series]:
    """RLdata10000: ``(records, truth)`` with 10,000 records; see :func:`load_rldata500`."""
    return _load_rldata(10000)
