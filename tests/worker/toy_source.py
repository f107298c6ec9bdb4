"""A toy model source, all in one module: what adding a source to ``explorer.model.sources`` takes.

{"toy": {"n": N}} is a dense layer with a bias and a ReLU on an N×N input (MatMul + BiasAdd + Relu,
which the remapper fuses on every CPU). This module holds its spec, its JSON parser, its command-line
options and reader, and its worker builder (numpy only; TensorFlow is handed in); ``SOURCE`` is the
table line. tests/worker/test_model_source.py adds it through ``EXPLORER_SOURCES`` alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from explorer.errors import SpecError
from explorer.model.sources import CliOption, Source

HERE = "tests.worker.toy_source"


@dataclass(frozen=True)
class ToySpec:
    n: int
    seed: int = 0

    source_id = "toy"
    preset = None

    @property
    def p(self) -> dict:
        return {"dtype": "float32", "n": self.n}

    @property
    def params(self) -> tuple:
        return tuple(self.p.items())

    def to_dict(self) -> dict:
        return {"toy": {"n": self.n, "seed": self.seed}}

    def identity(self) -> dict:
        return self.to_dict()

    def public_dict(self) -> dict:
        return self.to_dict()

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def label(self) -> str:
        return f"toy dense layer {self.n}×{self.n}"

    def cli_args(self) -> list[str]:
        return ["--toy", str(self.n)] + (["--toy-seed", str(self.seed)] if self.seed else [])

    def sizes(self) -> list[str]:
        return []

    def model_key(self) -> str:
        return self.to_json()

    def check_size(self) -> None:
        pass

    def tensor_shapes(self) -> dict:
        return {"x": (self.n, self.n), "w": (self.n, self.n), "b": (self.n,), "out": (self.n, self.n)}


def parse(data: dict) -> ToySpec:
    toy = data.get("toy")
    if not isinstance(toy, dict) or set(toy) - {"n", "seed"}:
        raise SpecError("toy", "expected {'n': N} (and optionally 'seed')")
    n, seed = toy.get("n"), toy.get("seed", 0)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1024:
        raise SpecError("toy.n", f"{n!r} is out of range; allowed 1..1024")
    return ToySpec(n, int(seed))


def read_cli(args) -> dict | None:
    if args.toy is None:
        return None
    return {"toy": {"n": args.toy, "seed": args.toy_seed}}


# ---- the worker's builder: TensorFlow is handed in ---------------------------------------------

def make_inputs(spec: ToySpec, tf) -> dict:
    rng = np.random.default_rng(spec.seed)
    return {name: tf.constant(rng.uniform(0.1, 1.0, shape).astype(np.float32))
            for name, shape in spec.tensor_shapes().items() if name != "out"}


def build(spec: ToySpec, tf):
    def body(x, w, b):
        return tf.nn.relu(tf.nn.bias_add(tf.linalg.matmul(x, w), b))

    return body, ["x", "w", "b"]


SOURCE = Source(
    "toy", "a toy model", "a dense layer with bias and ReLU", f"{HERE}:ToySpec", f"{HERE}:parse", HERE,
    f"{HERE}:read_cli", "--toy N",
    (CliOption(("--toy",), {"type": int, "metavar": "N", "help": "a toy dense layer of N×N"}),
     CliOption(("--toy-seed",), {"type": int, "default": 0, "metavar": "S", "help": "with --toy, its seed"}, own=True)),
    offers=frozenset({"graphs", "report", "passes", "bench", "log"}), simulated=False)
