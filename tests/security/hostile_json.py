"""Generated hostile JSON documents and link parameters for the explorer's small-document doors (issue 30).

Each good document the explorer reads (an experiment file, a lesson file, a layer stack, a page link's
parameters) is taken apart: every value in it, one at a time, is replaced by each of ``HOSTILE_VALUES`` (a
list where a name is expected, an object, null, a boolean, '²', 5,000 digits as text and as a number, a huge
string, a deep list), and whole documents are made deep, broad and huge. ``documents(kind)`` yields
``(label, text)`` pairs; ``link_params()`` yields ``(label, params)`` for ``Experiment.from_query``. Nothing here
runs them: the tests and benchmarks/hostile_inputs.py send them through the page, the engine and the CLI.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEEP = 5000  # levels: far past Python's recursion limit
HOSTILE_VALUES = {
    "list": [1], "object": {"a": 1}, "null": None, "bool": True, "superscript": "²", "arabic_digit": "٣",
    "digits_text": "9" * 5000, "minus": -1, "float": 1.5, "big_float": 1e308, "empty": "",
    "long_text": "x" * 70_000, "escape": "\x1b]52;c;aGk=\x07", "markup": "![x](http://example.invalid/x.png)",
    "deep": "DEEP",
}
BIG_NUMBER = "9" * 5000  # a JSON number of 5,000 digits, written raw (json.dumps would refuse)


def good_experiment() -> dict:
    return {"experiment": 1, "model": {"preset": "matmul_bias_relu", "params": {"m": 64}},
            "config": {"device": "cpu", "env": {"TF_ENABLE_ONEDNN_OPTS": "0"}, "grappler": {"remapping": "on"}},
            "compiler": "grappler", "view": {"tab": "graphs", "stages": "traced-optimized", "fold": False,
                                             "graph": "auto", "present": False},
            "bench": {"reps": 10, "warmup": 2, "seconds": 5, "processes": 1},
            "lesson": {"id": "gelu-fusion", "step": 2}}


def good_lesson() -> dict:
    return {"lesson": 1, "id": "my-class", "title": "A class", "summary": "s", "source": "x",
            "steps": [{"title": "One", "experiment": "preset=matmul_bias_relu&TF_ENABLE_ONEDNN_OPTS=0",
                       "text": "It fuses.", "ask": "Why?",
                       "look": {"tab": "graphs", "stages": "traced-optimized", "nodes": {"optimized": ["_FusedMatMul"]}},
                       "expect": {"fusions": 1, "made": ["_FusedMatMul [BiasAdd, Relu]"], "has": {"traced": ["MatMul"]},
                                  "lacks": {"optimized": ["BiasAdd"]}, "verdict": "fused"}}]}


def good_stack() -> dict:
    from explorer.model.stack_examples import example

    return example("resnet_basic_block")


def good_link() -> dict[str, str]:
    return {"preset": "matmul_bias_relu", "m": "64", "TF_ENABLE_ONEDNN_OPTS": "0", "on": "remapping",
            "off": "constant_folding", "tab": "bench", "stages": "traced-executed", "reps": "10", "lesson": "gelu-fusion",
            "step": "2", "present": "1", "view": "all", "fold": "1", "device": "cpu", "compiler": "both"}


GOOD = {"experiment": good_experiment, "lesson": good_lesson, "stack": good_stack}


def _paths(data, prefix=()):
    """Every place in ``data``: (path, value), containers included."""
    yield prefix, data
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _paths(value, prefix + (i,))


def _set(data, path, value):
    data = copy.deepcopy(data)
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


def _text(data) -> str:
    text = json.dumps(data)
    text = text.replace('"DEEP"', "[" * DEEP + "]" * DEEP)
    return text.replace('"BIGNUMBER"', BIG_NUMBER)


def documents(kind: str, every_path: bool = True):
    """(label, JSON text) of hostile documents of ``kind`` (experiment, lesson, stack)."""
    good = GOOD[kind]()
    yield f"{kind}:good", json.dumps(good)
    yield f"{kind}:deep", "[" * DEEP + "]" * DEEP
    yield f"{kind}:deep-object", '{"a":' * DEEP + "1" + "}" * DEEP
    yield f"{kind}:broad", "[" + "0," * 300_000 + "0]"
    yield f"{kind}:big-number", BIG_NUMBER
    yield f"{kind}:nan", '{"a": NaN}'
    yield f"{kind}:list", "[]"
    yield f"{kind}:string", '"x"'
    paths = [p for p, _ in _paths(good) if p]
    if not every_path:  # a sample for the slow doors: the top-level fields and the first nested ones
        paths = [p for p in paths if len(p) <= 2]
    for path in paths:
        where = ".".join(map(str, path))
        for name, value in HOSTILE_VALUES.items():
            yield f"{kind}:{where}={name}", _text(_set(good, path, value))
        yield f"{kind}:{where}=big-number", _text(_set(good, path, "BIGNUMBER"))


def link_params():
    """(label, params) of hostile page links: each parameter of a good link given each hostile value as text,
    and links that Streamlit or a browser would cut."""
    good = good_link()
    for key in good:
        for name, value in HOSTILE_VALUES.items():
            text = value if isinstance(value, str) else json.dumps(value)
            text = text.replace("DEEP", "[" * DEEP + "]" * DEEP)
            yield f"link:{key}={name}", dict(good, **{key: text})
        yield f"link:{key}=repeated", dict(good, **{key: [good[key], "x", good[key]]})
    deep_stack = "{" + '"a":{' * DEEP + "}" * DEEP + "}"
    yield "link:stack=deep", {"stack": deep_stack}
    yield "link:stack=list-dtype", {"stack": json.dumps(dict(good_stack(), input={"shape": [1, 8], "dtype": [1]}))}
    yield "link:import=dim-superscript", {"import": "a" * 64, "dim": "²"}
    yield "link:import=dim-digits", {"import": "a" * 64, "dim": "9" * 5000}
    yield "link:step=superscript", {"lesson": "gelu-fusion", "step": "²"}
    yield "link:step=digits", {"lesson": "gelu-fusion", "step": "9" * 5000}
    yield "link:on-off-same", {"preset": "matmul_bias_relu", "on": "remapping", "off": "remapping"}
    yield "link:many-keys", {f"k{i}": "1" for i in range(1200)}
