"""The parent side of the worker processes: validated requests in, plain result data out.

``Engine`` is the entry point (the page and the command line hold one); ``interface`` writes down every
call they make, which ``replay.ReplayEngine`` (recorded answers, no TensorFlow) implements as well;
``runner`` starts and watches worker processes, ``pool`` keeps the warm ones, ``admission`` queues requests
on the host's cores, ``cache`` keeps results.
"""

from .engine import Engine
from .interface import EngineInterface
from .runner import Limits

__all__ = ["Engine", "EngineInterface", "Limits"]
