"""Compare versions: summary statistics, cluster sizes, pairwise agreement, splits and merges."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from er_evaluation.app.app_common import data_key, load_project, plain_errors
from er_evaluation.error_analysis import predicted_cluster_errors, reference_cluster_errors
from er_evaluation.errors import CoverageWarning
from er_evaluation.metrics import evaluate
from er_evaluation.summary import cluster_size_distribution, join_names, summary_table
from er_evaluation.vocabulary import REGISTRY

AGREEMENT = {name: REGISTRY[name].title for name in ("pairwise_f1", "adjusted_rand_index")}

st.title("Compare versions")
data = load_project()
key = data_key(data)
all_versions = data.versions
# Four evenly spaced versions by default: every pair costs one contingency.
spread = sorted({round(i) for i in np.linspace(0, len(all_versions) - 1, 4)})
versions = st.multiselect(
    "Versions",
    all_versions,
    default=[all_versions[i] for i in spread],
    key="cmp_versions",
)
if not versions:
    st.stop()


def names_of(data) -> pd.Series | None:
    """Record id -> "first last" for the name statistics, when the records have names."""
    cols = [c for c in ("name_first", "name_last") if c in data.records.columns]
    return join_names(data.records, cols) if cols else None


@st.cache_data(show_spinner="Summarising…", max_entries=16)
def summaries(key: str, versions: tuple) -> pd.DataFrame:
    return summary_table({v: data.predictions[v] for v in versions}, names=names_of(data))


@st.cache_data(show_spinner="Comparing every pair of versions…", max_entries=16)
def agreement(key: str, versions: tuple, metric: str) -> pd.DataFrame:
    """metric(b against a) on the mentions both versions cover, for every pair."""
    matrix = pd.DataFrame(1.0, index=list(versions), columns=list(versions))
    for i, a in enumerate(versions):
        for b in versions[i + 1 :]:
            with warnings.catch_warnings():  # the caption says: shared mentions only
                warnings.simplefilter("ignore", CoverageWarning)
                value = evaluate(
                    data.predictions[b],
                    data.predictions[a],
                    metrics=[metric],
                    on_missing="restrict",
                ).iloc[0, 0]
            matrix.loc[a, b] = matrix.loc[b, a] = value
    return matrix


st.subheader("Summary statistics")
with plain_errors("Could not summarise"):
    table = summaries(key, tuple(versions))
st.dataframe(table.T, key="cmp_summary")

st.subheader("Cluster size distribution")
sizes = pd.concat(
    [
        cluster_size_distribution(data.predictions[v])
        .rename("clusters")
        .reset_index()
        .assign(version=v)
        for v in versions
    ]
)
fig = px.scatter(
    sizes,
    x="size",
    y="clusters",
    color="version",
    log_x=True,
    log_y=True,
    labels={"size": "cluster size (records)", "clusters": "number of clusters"},
)
st.plotly_chart(fig, key="cmp_sizes")

st.subheader("Agreement between versions")
metric = st.selectbox(
    "Agreement measure", list(AGREEMENT), format_func=AGREEMENT.get, key="cmp_metric"
)
with plain_errors("Could not compare versions"):
    matrix = agreement(key, tuple(versions), metric)
heat = go.Figure(
    go.Heatmap(
        z=matrix.to_numpy(),
        x=matrix.columns,
        y=matrix.index,
        zmin=0,
        zmax=1,
        colorscale="Viridis",
        text=np.round(matrix.to_numpy(), 3),
        texttemplate="%{text}",
        colorbar={"title": AGREEMENT[metric]},
    )
)
heat.update_layout(height=120 + 60 * len(versions), margin={"t": 20})
heat.update_xaxes(type="category")  # version names look like dates; keep them as labels
heat.update_yaxes(type="category")
st.plotly_chart(heat, key="cmp_heatmap")
st.caption("Each cell compares two versions on the mentions both of them cover.")

st.subheader("Clusters split or merged between two versions")
c1, c2 = st.columns(2)
old = c1.selectbox("From version", versions, index=0, key="cmp_old")
new = c2.selectbox("To version", versions, index=len(versions) - 1, key="cmp_new")
if old == new:
    st.info("Choose two different versions.")
    st.stop()
a, b = data.predictions[old], data.predictions[new]
with plain_errors("Could not compare the two versions"):
    split = reference_cluster_errors(b, a, on_missing="restrict")
    merged = predicted_cluster_errors(b, a, on_missing="restrict")
split = split[split["n_predicted_clusters"] > 1].sort_values("size", ascending=False)
merged = merged[merged["n_reference_clusters"] > 1].sort_values("size", ascending=False)
m1, m2 = st.columns(2)
m1.metric(f"{old} clusters split in {new}", f"{len(split):,}")
m2.metric(f"{new} clusters merging several {old} clusters", f"{len(merged):,}")
kind = st.radio(
    "Show",
    ["split", "merged"],
    key="cmp_kind",
    horizontal=True,
    format_func={"split": f"split {old} clusters", "merged": f"merged {new} clusters"}.get,
)
listing = split if kind == "split" else merged
st.dataframe(listing.head(200), key="cmp_listing")
if listing.empty:
    st.stop()
chosen = st.selectbox("Drill down into cluster", listing.index[:200], key="cmp_drill")
version, membership = (old, a) if kind == "split" else (new, b)
members = membership.index[(membership == chosen).to_numpy()]
detail = data.records.loc[members, data.fields].copy()
detail.insert(0, f"cluster in {old}", a.reindex(members).to_numpy())
detail.insert(1, f"cluster in {new}", b.reindex(members).to_numpy())
detail = detail.sort_values([f"cluster in {new}" if kind == "split" else f"cluster in {old}"])
st.caption(f"The {len(members)} records of cluster `{chosen}` of version {version}.")
st.dataframe(detail, key="cmp_detail")
