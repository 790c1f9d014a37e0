"""Entry point of the review app: ``streamlit run app/er_eval_app.py``.

Opens on the bundled PatentsView data (or the project in ``$ER_EVAL_PROJECT_DIR``) at the
review queue. Each page is a thin script in ``views/`` over library calls.
"""

from __future__ import annotations

import streamlit as st
from app_common import sidebar

st.set_page_config(page_title="er_evaluation review", page_icon="🔎", layout="wide")

pages = [
    st.Page("views/project.py", title="Project / data", icon="📁", url_path="project"),
    st.Page("views/sample.py", title="Sample", icon="🎲", url_path="sample"),
    st.Page("views/review.py", title="Review queue", icon="✅", url_path="review", default=True),
    st.Page("views/estimates.py", title="Estimates", icon="📊", url_path="estimates"),
    st.Page("views/compare.py", title="Compare versions", icon="🔀", url_path="compare"),
    st.Page("views/pairs.py", title="Pair labelling", icon="🔗", url_path="pairs"),
]
page = st.navigation(pages)
sidebar()
page.run()
