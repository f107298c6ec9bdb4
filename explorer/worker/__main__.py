"""``python -m explorer.worker``: the worker process (see main.py)."""

import os
import sys

from .main import main

main()
# The parent closed our stdin: every answer is sent. Leave at once instead of through the
# interpreter's teardown with TensorFlow loaded (about a second that the parent waits for).
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
