"""TF Fusion Explorer in the browser: ``streamlit run app.py``.

The page itself lives in ``explorer/ui`` (one main page: sidebar to build the model, then graphs,
benchmark and what-if in tabs); this file only sets the page up and runs it.
"""

import streamlit as st

from explorer.ui import cached, page, presenter

# 360 px: the default sidebar clipped most preset titles, in the box and in its dropdown alike. The presenter
# view folds it away: one setting per run (two that differ make the browser open and close it again).
st.set_page_config(page_title="TF Fusion Explorer", page_icon=":material/merge:", layout="wide",
                   initial_sidebar_state=presenter.sidebar_state(360))

page.render(cached.engine())
