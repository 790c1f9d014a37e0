"""The kernel as SQL, one formulation for DuckDB and Spark SQL.

Every query reads views with columns ``id`` and ``cluster`` and returns a small table:
per-side validation counts (one group-by on the id), the contingency cells (one join and
one group-by on the two cluster ids), predicted-cluster sizes and population totals (one
group-by on the cluster id), the size distribution of one clustering. The first five
offending ids of an error are the five smallest (``ORDER BY id LIMIT 5``): an engine's
records have no order, and the in-memory kernel names the same ids. No record is ever
collected to the driver.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from er_evaluation.engines._backends import View
from er_evaluation.errors import Offenders

__all__ = [
    "SideCounts",
    "side_counts",
    "first_ids",
    "shared_cells",
    "sample_cells",
    "touched_sizes",
    "size_distribution",
    "records_of",
    "name_statistics",
    "count",
]


def _missing_cluster(view: View) -> str:
    return "cluster IS NULL" + (" OR isnan(cluster)" if view.cluster_float else "")


def _int(value) -> int:
    return 0 if value is None else int(value)


@dataclass(frozen=True)
class SideCounts:
    """Validation counts of one clustering: records, records with a missing id or cluster
    id, ids that occur more than once."""

    n_records: int
    missing_ids: int
    missing_clusters: int
    duplicated_ids: int


def _side_query(view: View, side: int) -> str:
    return f"""
        SELECT {side} AS side, sum(c) AS n,
               sum(CASE WHEN id IS NULL THEN c ELSE 0 END) AS missing_ids,
               sum(m) AS missing_clusters,
               sum(CASE WHEN id IS NOT NULL AND c > 1 THEN 1 ELSE 0 END) AS duplicated
        FROM (SELECT id, count(*) AS c,
                     sum(CASE WHEN {_missing_cluster(view)} THEN 1 ELSE 0 END) AS m
              FROM {view.name} GROUP BY id) g{side}
    """


def side_counts(backend, *views: View) -> list[SideCounts]:
    """Every structural count of each clustering (one group-by on the id each), in one
    query: on Spark every query is a job with seconds of overhead."""
    rows = backend.arrow(
        " UNION ALL ".join(_side_query(view, side) for side, view in enumerate(views))
    ).to_pylist()
    rows = sorted(rows, key=lambda row: row["side"])
    return [
        SideCounts(
            _int(row["n"]),
            _int(row["missing_ids"]),
            _int(row["missing_clusters"]),
            _int(row["duplicated"]),
        )
        for row in rows
    ]


def first_ids(backend, sql: str, total: int, k: int = 5) -> Offenders:
    """The ``k`` smallest ids returned by ``sql`` (a query with one column ``id``)."""
    rows = backend.arrow(f"SELECT id FROM ({sql}) q ORDER BY id LIMIT {k}").column("id")
    return Offenders(rows.to_pylist(), total)


def count(backend, sql: str) -> int:
    """Number of rows of ``sql``."""
    return _int(backend.arrow(f"SELECT count(*) AS n FROM ({sql}) q").column("n")[0].as_py())


def missing_cluster_ids(view: View) -> str:
    return f"SELECT id FROM {view.name} WHERE {_missing_cluster(view)}"


def duplicated_ids(view: View) -> str:
    return f"SELECT id FROM {view.name} GROUP BY id HAVING count(*) > 1"


def all_ids(view: View) -> str:
    return f"SELECT id FROM {view.name}"


def absent_ids(view: View, other: View) -> str:
    """Ids of ``view`` that ``other`` lacks (an anti-join)."""
    return (
        f"SELECT a.id AS id FROM {view.name} a LEFT JOIN {other.name} b ON a.id = b.id "
        "WHERE b.id IS NULL"
    )


def shared_cells(backend, prediction: View, reference: View) -> pa.Table:
    """Records per (predicted cluster, reference cluster, side) over the full outer join on
    the id: ``inp``/``inr`` say whether the records are in the prediction/reference, so the
    rows with both are the contingency cells and the others count one-side records."""
    return backend.arrow(
        f"""
        SELECT p.cluster AS pc, r.cluster AS rc, p.id IS NOT NULL AS inp,
               r.id IS NOT NULL AS inr, count(*) AS n
        FROM {prediction.name} p FULL OUTER JOIN {reference.name} r ON p.id = r.id
        GROUP BY 1, 2, 3, 4
        """
    )


def sample_cells(backend, prediction: View, reference: View) -> pa.Table:
    """Cells of a reference sampled inside the prediction's population: the reference's
    records joined to their predicted cluster (``inp`` false: absent from the prediction)."""
    return backend.arrow(
        f"""
        SELECT p.cluster AS pc, r.cluster AS rc, p.id IS NOT NULL AS inp, count(*) AS n
        FROM {reference.name} r LEFT JOIN {prediction.name} p ON r.id = p.id
        GROUP BY 1, 2, 3
        """
    )


def touched_sizes(backend, prediction: View, reference: View) -> pa.Table:
    """Sizes of the predicted clusters that the reference's records fall in (one row each,
    ``k`` = 1) and one row (``pc`` NULL) summing all other predicted clusters, so the
    population totals (records, clusters, Σ|ĉ|(|ĉ|-1), Σ|ĉ| ln|ĉ|, Σ(|ĉ|(|ĉ|-1))²) are
    column sums."""
    return backend.arrow(
        f"""
        WITH s AS (SELECT cluster, count(*) AS size FROM {prediction.name} GROUP BY cluster),
             t AS (SELECT DISTINCT p.cluster AS cluster
                   FROM {reference.name} r JOIN {prediction.name} p ON r.id = p.id)
        SELECT CASE WHEN t.cluster IS NULL THEN NULL ELSE s.cluster END AS pc,
               count(*) AS k, sum(s.size) AS n, sum(s.size * (s.size - 1)) AS links2,
               sum(s.size * ln(s.size)) AS entropy,
               sum(CAST(s.size * (s.size - 1) AS DOUBLE) * CAST(s.size * (s.size - 1) AS DOUBLE))
                   AS links2_squared
        FROM s LEFT JOIN t ON s.cluster = t.cluster
        GROUP BY 1
        """
    )


def records_of(backend, view: View, ids: View, clusters: View | None) -> pa.Table:
    """Records of ``view`` whose id is an id of ``ids`` or whose cluster is a cluster of
    ``clusters`` (two semi-joins; only the first without ``clusters``)."""
    by_id = f"""
        SELECT v.id, v.cluster FROM {view.name} v JOIN (SELECT DISTINCT id FROM {ids.name}) i
            ON v.id = i.id
        """
    if clusters is None:
        return backend.arrow(by_id)
    return backend.arrow(
        f"""{by_id}
        UNION
        SELECT v.id, v.cluster FROM {view.name} v
            JOIN (SELECT DISTINCT cluster FROM {clusters.name}) c ON v.cluster = c.cluster
        """
    )


def size_distribution(backend, view: View) -> pa.Table:
    """Number of clusters of each size (one row per distinct size)."""
    return backend.arrow(
        f"""
        SELECT size, count(*) AS k
        FROM (SELECT count(*) AS size FROM {view.name} GROUP BY cluster) s
        GROUP BY size ORDER BY size
        """
    )


def name_statistics(backend, view: View, names: View) -> dict:
    """PatentsView name statistics (see :func:`er_evaluation.summary.summary_statistics`):
    distinct (cluster, name) pairs, clusters per name, names per cluster."""
    row = backend.arrow(
        f"""
        WITH j AS (SELECT v.cluster, n.cluster AS name
                   FROM {view.name} v JOIN {names.name} n ON v.id = n.id),
             pairs AS (SELECT cluster, name, count(*) AS records FROM j GROUP BY cluster, name),
             per_name AS (SELECT name, count(*) AS clusters FROM pairs
                          WHERE name IS NOT NULL GROUP BY name),
             per_cluster AS (SELECT p.cluster, count(q.name) AS names,
                                    max(q.clusters) AS shared,
                                    sum(CASE WHEN p.name IS NULL THEN p.records ELSE 0 END)
                                        AS unnamed
                             FROM pairs p LEFT JOIN per_name q ON p.name = q.name
                             GROUP BY p.cluster)
        SELECT sum(CASE WHEN names > 0 THEN 1 ELSE 0 END) AS with_names,
               sum(CASE WHEN shared >= 2 THEN 1 ELSE 0 END) AS homonyms,
               sum(CASE WHEN names > 1 THEN 1 ELSE 0 END) AS varied,
               sum(unnamed) AS unnamed
        FROM per_cluster
        """
    ).to_pylist()[0]
    return {key: _int(value) for key, value in row.items()}
