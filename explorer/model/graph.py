"""The neutral graph model: what every other part of the explorer reads instead of a GraphDef.

The worker converts each GraphDef it captures into plain dicts of this shape; ``Graph.from_dict``
turns them into these dataclasses. Each edge lives on its target node and carries the source
port and whether it is a control edge, so nothing downstream ever parses TF input strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

# Stage ids, in pipeline order, with the words the page and the CLI use for them.
STAGES = {
    "traced": "as traced (before Grappler)",
    "optimized": "after Grappler",
    "executed": "as executed (partition graph)",
}

# Ops that move a tensor between the partitions of a graph split across devices (CPU and GPU).
TRANSFER_OPS = frozenset({"_Send", "_Recv", "_HostSend", "_HostRecv"})
# Where a graph's inputs enter: a function's _Arg, a plain GraphDef's Placeholder (the simulated GPU's).
INPUT_OPS = frozenset({"_Arg", "Placeholder"})
# Ops that carry data in and out of a function or hold constants: folded away on request.
BOILERPLATE_OPS = INPUT_OPS | TRANSFER_OPS | frozenset(
    {"_Retval", "Const", "ReadVariableOp", "Identity", "NoOp", "_HostConst"})


@dataclass(frozen=True)
class Edge:
    src: str  # name of the producing node
    port: int = 0  # output index on the producer
    control: bool = False  # a control dependency ("^name" in TF)

    def to_dict(self) -> dict:
        return {"src": self.src, "port": self.port, "control": self.control}


@dataclass(frozen=True)
class Node:
    name: str
    op: str
    device: str = ""  # short form: "CPU:0", "GPU:0" or ""
    dtype: str = ""  # the T attribute (or first type attribute) as a TF dtype name
    inputs: tuple[Edge, ...] = ()
    fused_ops: tuple[str, ...] = ()  # the fused_ops attribute of _Fused*/_Mkl* nodes
    attrs: tuple[tuple[str, str], ...] = ()  # small display attributes, already stringified
    shape: str = ""  # first output shape as "[64,256]" when TF recorded it

    @property
    def attr(self) -> dict[str, str]:
        return dict(self.attrs)

    @property
    def data_inputs(self) -> list[Edge]:
        return [e for e in self.inputs if not e.control]

    @property
    def dims(self) -> list[str] | None:
        """The recorded shape's dimensions ('[2,4,16,16]': ['2', '4', '16', '16']; '-1' where unknown); None when
        TensorFlow recorded no shape."""
        if not self.shape.startswith("["):
            return None
        return [d.strip() for d in self.shape.strip("[]").split(",")] if self.shape != "[]" else []

    def to_dict(self) -> dict:
        return {
            "name": self.name, "op": self.op, "device": self.device, "dtype": self.dtype,
            "inputs": [e.to_dict() for e in self.inputs], "fused_ops": list(self.fused_ops),
            "attrs": dict(self.attrs), "shape": self.shape,
        }

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "Node":
        return Node(
            name=d["name"], op=d["op"], device=d.get("device", ""), dtype=d.get("dtype", ""),
            inputs=tuple(Edge(e["src"], int(e.get("port", 0)), bool(e.get("control", False))) for e in d.get("inputs", ())),
            fused_ops=tuple(d.get("fused_ops", ())),
            attrs=tuple(sorted((str(k), str(v)) for k, v in (d.get("attrs") or {}).items())),
            shape=d.get("shape", ""),
        )


@dataclass(frozen=True)
class Graph:
    nodes: tuple[Node, ...] = ()
    stage: str = ""
    _index: dict = field(default_factory=dict, compare=False, repr=False, hash=False)

    def __post_init__(self):
        object.__setattr__(self, "_index", {n.name: n for n in self.nodes})

    def __contains__(self, name: str) -> bool:
        return name in self._index

    def __getitem__(self, name: str) -> Node:
        return self._index[name]

    def get(self, name: str) -> Node | None:
        return self._index.get(name)

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def ops(self) -> list[str]:
        return [n.op for n in self.nodes]

    def compute_ops(self) -> list[str]:
        """Op types other than argument/return/constant plumbing, in graph order."""
        return [n.op for n in self.nodes if n.op not in BOILERPLATE_OPS]

    def consumers(self) -> dict[str, list[tuple[str, Edge]]]:
        out: dict[str, list[tuple[str, Edge]]] = {n.name: [] for n in self.nodes}
        for n in self.nodes:
            for e in n.inputs:
                out.setdefault(e.src, []).append((n.name, e))
        return out

    def to_dict(self) -> dict:
        return {"stage": self.stage, "nodes": [n.to_dict() for n in self.nodes]}

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "Graph":
        return Graph(tuple(Node.from_dict(n) for n in d.get("nodes", ())), d.get("stage", ""))


def parse_input(text: str) -> Edge:
    """One TF input string ('^ctrl', 'node:1', 'node') as an Edge. Used once, in the worker."""
    if text.startswith("^"):
        return Edge(text[1:], 0, True)
    name, sep, port = text.rpartition(":")
    if sep and port.isdigit():
        return Edge(name, int(port), False)
    return Edge(text, 0, False)


def short_device(device: str) -> str:
    """'/job:localhost/replica:0/task:0/device:CPU:0' -> 'CPU:0'."""
    if "device:" in device:
        return device.rsplit("device:", 1)[1]
    return device


def channel_from_right(layout: str) -> int:
    """Which axis of a tensor of ``layout`` holds the channels, counted from the right: 1 channels last ('NHWC',
    '' for TensorFlow's default), 3 for 'NCHW', 4 for 'NCDHW'."""
    return len(layout) - 1 if layout.startswith("NC") else 1
