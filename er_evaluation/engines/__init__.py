"""The kernel where the data lives: DuckDB (embedded, out-of-core) and Spark.

Wrap a clustering that is too large for pandas with :func:`table` (Parquet/CSV paths, a
DuckDB table name or relation, an Arrow table, a Spark DataFrame, with its id and cluster
column names) and pass it wherever a membership Series is accepted: the contingency
kernel, every exact metric and :func:`~er_evaluation.metrics.evaluate`, the estimators
(the population on the engine, the reviewed sample in memory), the summary statistics.
The engine runs the aggregations (group by the two cluster ids and count; cluster sizes;
validation) and returns small tables; the metrics and estimators run unchanged on them.
Nothing collects the records to the driver.

DuckDB and pyspark are optional (``pip install 'er_evaluation_toolkit[duckdb]'`` or
``[spark]``) and imported only when a table is used.
"""

from er_evaluation.engines._table import Table, as_table, table

__all__ = ["Table", "table", "as_table"]
