"""The parent side of the worker processes: validated requests in, plain result data out.

``Engine`` is the entry point (the page and the command line hold one); ``runner`` starts and
watches worker processes, ``admission`` queues requests on the host's cores, ``cache`` keeps results.
"""

from .engine import Engine
from .runner import Limits

__all__ = ["Engine", "Limits"]
