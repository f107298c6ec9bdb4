"""``python -m explorer.worker``: the worker process (see main.py)."""

import os
import sys

if os.environ.get("EXPLORER_WORKER_ROLE") == "reference":
    # The unfused reference of inspect's check, run beside the fused run that the person waits for (and whose
    # graphs they see): it yields the cores to it. Every thread TensorFlow starts inherits this.
    os.nice(10)

from .main import main  # after the priority is set, before TensorFlow starts its threads

main()
# The parent closed our stdin: every answer is sent. Leave at once instead of through the
# interpreter's teardown with TensorFlow loaded (about a second that the parent waits for).
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
