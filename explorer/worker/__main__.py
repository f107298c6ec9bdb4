"""``python -m explorer.worker``: the worker process (see main.py)."""

from .main import main

main()
