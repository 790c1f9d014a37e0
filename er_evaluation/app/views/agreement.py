"""Agreement: how often two reviewers who decided the same records independently agree."""

from __future__ import annotations

import streamlit as st

from er_evaluation.app.app_common import open_project, plain_errors

st.title("Agreement of double review")
project = open_project()
with plain_errors("Could not compute agreement"):
    result = project.agreement()
if result.n_units == 0:
    st.info(
        "No record of the current sample has been decided by two reviewers yet. Assign a "
        "share of the sample to two reviewers on the Sample page; each then reviews it blind "
        "to the other."
    )
    st.stop()

c1, c2, c3, c4 = st.columns(4)
c1.metric("Double-reviewed records", f"{result.n_units:,}")
c2.metric(
    "Identical true clusters",
    f"{result.identical_share:.1%}",
    help="Share of double-reviewed records whose two true clusters are the same set.",
)
c3.metric(
    "Link agreement",
    f"{result.link_agreement:.1%}",
    help=f"Share of the {result.n_links:,} link decisions (sampled record, candidate) on "
    "which both reviewers agree; candidates are the records either reviewer saw or added.",
)
c4.metric(
    "Cohen's kappa (links)",
    "undefined" if result.kappa != result.kappa else f"{result.kappa:.3f}",
    help="Agreement on link decisions beyond chance (Cohen 1960); raters are the first and "
    "the second reviewer to decide each record.",
)
st.caption("Records of the current sample only, decided for it (see the Sample page).")
st.dataframe(result.per_record, hide_index=True, key="agreement_table")
st.page_link("views/adjudication.py", label="Settle disagreements on the Adjudication page")
