"""Names of records side by side, compared as a reviewer would (case, accents, spaces)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from er_evaluation.errors import examples, plain_id
from er_evaluation.review._model import ReviewError


def default_name_cols(columns: Iterable[str]) -> list[str] | None:
    """PatentsView's ``name_first, name_last``, else ``name``, else None."""
    columns = set(columns)
    for cols in (["name_first", "name_last"], ["name"]):
        if set(cols) <= columns:
            return cols
    return None


def names_beside(
    records: pd.DataFrame,
    sampled_record: Any,
    ids: Iterable,
    *,
    id_col: str | None = None,
    name_cols: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Names of ``ids`` beside the sampled record's name, for the reviewer to compare.

    ``records`` is indexed by record id, or has the ids in ``id_col``. ``name_cols``
    defaults to ``name_first, name_last`` (PatentsView) or ``name`` if present. Returns
    columns ``record_id, name, sampled_name, same_name`` (names compared case- and
    accent-insensitively, spaces collapsed).
    """
    table = records.set_index(id_col) if id_col is not None else records
    if name_cols is None:
        name_cols = default_name_cols(table.columns)
        if name_cols is None:
            raise ReviewError(
                f"records: no name columns found among {list(table.columns)}; pass name_cols="
            )
    missing = [c for c in name_cols if c not in table.columns]
    if missing:
        raise ReviewError(f"records: name column(s) {missing} not found in {list(table.columns)}")
    ids = [plain_id(i) for i in ids]
    wanted = [plain_id(sampled_record), *ids]
    pos = table.index.get_indexer(wanted)
    unknown = [w for w, p in zip(wanted, pos, strict=True) if p < 0]
    if unknown:
        raise ReviewError(f"record id(s) not in the records table: {examples(unknown)}")
    parts = table.iloc[pos][list(name_cols)].astype(object).where(lambda f: f.notna(), "")
    names = [" ".join(str(v) for v in row if str(v)).strip() for row in parts.to_numpy()]
    folded = [_fold(n) for n in names]
    return pd.DataFrame(
        {
            "record_id": pd.Series(ids, dtype=object),
            "name": names[1:],
            "sampled_name": [names[0]] * len(ids),
            "same_name": [f == folded[0] for f in folded[1:]],
        }
    )


def differing_fields(
    records: pd.DataFrame, sampled_record: Any, ids: Iterable, fields: Sequence[str]
) -> pd.DataFrame:
    """Boolean frame (rows ``ids``, columns ``fields``): True where a record's value differs
    from the sampled record's, compared like names (case, accents, spaces ignored); empty
    values never count as different. For highlighting what a reviewer should look at."""
    ids = list(ids)
    table = records.loc[[plain_id(sampled_record), *ids], list(fields)].astype(object)
    text = table.where(table.notna(), "").map(lambda v: _fold(str(v)))
    base = text.iloc[0]
    rows = text.iloc[1:]
    differs = rows.ne(base, axis=1) & rows.ne("") & (base != "")
    differs.index = pd.Index(ids, dtype=object)
    return differs


def field_variants(records: pd.DataFrame, ids: Iterable, fields: Sequence[str]) -> pd.DataFrame:
    """The distinct values of ``fields`` among records ``ids``, compared like names (case,
    accents, spaces ignored), most frequent first within each field: columns ``field``,
    ``value`` (the first spelling seen), ``records`` (how many have it) and ``ids`` (a
    tuple of them). Empty values are the variant ``""``. For a large cluster, the summary
    a reviewer reads before ticking every record of one city or name at once."""
    ids = [plain_id(i) for i in ids]
    table = records.loc[ids, list(fields)].astype(object)
    rows = []
    for name in fields:  # one grouped pass per field, not per record
        values = table[name].where(table[name].notna(), "").map(str)
        folded = values.map(_fold)
        groups = pd.Series(ids, dtype=object).groupby(folded.to_numpy(), sort=False)
        shown = values.groupby(folded.to_numpy(), sort=False).first()
        for key, members in groups:
            rows.append(
                {"field": name, "value": shown[key], "records": len(members), "ids": tuple(members)}
            )
    frame = pd.DataFrame(rows, columns=["field", "value", "records", "ids"])
    order = {name: i for i, name in enumerate(fields)}
    return frame.sort_values(
        ["field", "records"], key=lambda c: c.map(order) if c.name == "field" else -c, kind="stable"
    ).reset_index(drop=True)


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(stripped.lower().split())
