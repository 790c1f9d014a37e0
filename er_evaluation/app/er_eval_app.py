"""Entry point of the review app, started by ``er-eval app [PROJECT_DIR]``.

Opens on the bundled PatentsView data (or the project in ``$ER_EVAL_PROJECT_DIR``) at the
review queue. Each page is a thin script in ``views/`` over
:class:`er_evaluation.review.Project`, reachable by its URL (``/review``, ``/project``,
…); the project folder and the reviewer (chosen from the project's list) are kept in the
URL's query parameters, so a reload keeps them.
"""

from __future__ import annotations

import streamlit as st

from er_evaluation.app.app_common import sidebar

st.set_page_config(page_title="er_evaluation review", page_icon=":material/search:", layout="wide")

REVIEW = st.Page(
    "views/review.py", title="Review queue", icon=":material/fact_check:", url_path="review"
)


def _home() -> None:
    # The default page is served at "/" only; sending it on to the review page keeps
    # "/review" a real address (and the query parameters with it).
    st.switch_page(REVIEW, query_params=st.query_params.to_dict())


pages = [
    st.Page(_home, title="Home", url_path="home", default=True, visibility="hidden"),
    st.Page(
        "views/project.py",
        title="Project / data",
        icon=":material/folder_open:",
        url_path="project",
    ),
    st.Page("views/sample.py", title="Sample", icon=":material/casino:", url_path="sample"),
    REVIEW,
    st.Page(
        "views/agreement.py",
        title="Agreement",
        icon=":material/group:",
        url_path="agreement",
    ),
    st.Page(
        "views/adjudication.py",
        title="Adjudication",
        icon=":material/gavel:",
        url_path="adjudication",
    ),
    st.Page(
        "views/estimates.py", title="Estimates", icon=":material/monitoring:", url_path="estimates"
    ),
    st.Page(
        "views/compare.py",
        title="Compare versions",
        icon=":material/compare_arrows:",
        url_path="compare",
    ),
    st.Page("views/pairs.py", title="Pair labelling", icon=":material/link:", url_path="pairs"),
]
page = st.navigation(pages)
sidebar()
page.run()
