"""``python -m explorer.ui.serve [streamlit options]``: the app server, warm from its first visitor on.

``streamlit run app.py`` runs the page only when a browser connects, so the first visitor of a fresh
server waited for a TensorFlow import (seconds). This starts the server's Engine first and, in the
background, the default configuration's worker (with the server's EXPLORER_DEFAULT_ENV flags), the
default experiment's result and its drawing (``cached.start_server_engine``); then it hands over to Streamlit's own command line, and the page
adopts that Engine (``cached.engine``): the first visitor's page only draws. ``./dev.sh app`` runs it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..model.flags import Config
from . import cached, state

APP = Path(__file__).resolve().parents[2] / "app.py"


def main(argv: list[str]) -> None:
    env, _ = state.server_env_defaults()  # a bad setting is reported on the page; start with TF's defaults
    cached.start_server_engine(Config.make("cpu", env))
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(APP), *argv]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])
