"""TF Fusion Explorer in the browser: ``streamlit run app.py``.

The page itself lives in ``explorer/ui`` (one main page: sidebar to build the model, then graphs,
benchmark and what-if in tabs); this file only sets the page up and runs it.
"""

import streamlit as st

# 360 px: the default sidebar clipped most preset titles, in the box and in its dropdown alike.
st.set_page_config(page_title="TF Fusion Explorer", page_icon=":material/merge:", layout="wide",
                   initial_sidebar_state=360)

from explorer.ui import cached, page  # noqa: E402  (after set_page_config: nothing may draw before it)

page.render(cached.engine())
