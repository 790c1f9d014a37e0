"""The review app: a Streamlit front end over :mod:`er_evaluation.review`.

Installed with the ``app`` extra and started by ``er-eval app [PROJECT_DIR]``. Importing
this package imports no Streamlit; only the app's own scripts (``er_eval_app.py``,
``app_common.py`` and ``views/``) do, and they run only inside the app's server.
"""
