"""Entry point of the review app: ``streamlit run app/er_eval_app.py``.

Opens on the bundled PatentsView data (or the project in ``$ER_EVAL_PROJECT_DIR``) at the
review queue. Each page is a thin script in ``views/`` over library calls.
"""

from __future__ import annotations

import streamlit as st
from app_common import sidebar

st.set_page_config(page_title="er_evaluation review", page_icon=":material/search:", layout="wide")

pages = [
    st.Page(
        "views/project.py",
        title="Project / data",
        icon=":material/folder_open:",
        url_path="project",
    ),
    st.Page("views/sample.py", title="Sample", icon=":material/casino:", url_path="sample"),
    st.Page(
        "views/review.py",
        title="Review queue",
        icon=":material/fact_check:",
        url_path="review",
        default=True,
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
