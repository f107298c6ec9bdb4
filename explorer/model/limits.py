"""Size limits every model source stays under (presets, op chains, layer stacks); the page and the CLI state them."""

from __future__ import annotations

MAX_DIM = 1 << 20
MAX_TENSOR_BYTES = 512 << 20
MAX_MODEL_BYTES = 2 << 30
