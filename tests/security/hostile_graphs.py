"""GraphDefs in text format, written by hand: the hostile graphs of the security tests, with no TensorFlow.

Each helper returns pbtxt text; ``graph`` joins nodes and a library into a file's content. The worker
parses them as a GraphDef in text format, as it would a user's ``.pbtxt``.
"""

from __future__ import annotations

F32 = "DT_FLOAT"


def q(text: str) -> str:
    """A pbtxt string literal of any text: quotes, backslashes and every byte outside printable ASCII escaped
    in octal, as text_format reads them (a node name may hold a newline or a NUL)."""
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        out.append("\\" + char if char in '"\\' else char if 32 <= byte < 127 else f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _attr(key: str, value: str) -> str:
    return f"attr {{ key: {q(key)} value {{ {value} }} }}"


def dtype(key: str = "T", kind: str = F32) -> str:
    return _attr(key, f"type: {kind}")


def node(name: str, op: str, *inputs: str, attrs: str = "") -> str:
    ins = " ".join(f"input: {q(i)}" for i in inputs)
    return f"node {{ name: {q(name)} op: {q(op)} {ins} {attrs} }}"


def placeholder(name: str = "x", dims=(2,)) -> str:
    shape = " ".join(f"dim {{ size: {d} }}" for d in dims)
    return node(name, "Placeholder", attrs=dtype("dtype") + " " + _attr("shape", f"shape {{ {shape} }}"))


def const(name: str, values, dims=None, kind: str = F32) -> str:
    """A Const node; ``dims`` defaults to the values' own length (a vector). Fewer values than the shape
    holds are broadcast by TensorFlow: one value and a huge shape is a small file and a huge tensor."""
    values = list(values)
    dims = [len(values)] if dims is None else list(dims)
    shape = " ".join(f"dim {{ size: {d} }}" for d in dims)
    field = {"DT_FLOAT": "float_val", "DT_INT32": "int_val", "DT_INT64": "int64_val", "DT_STRING": "string_val"}[kind]
    vals = " ".join(f"{field}: {q(v) if isinstance(v, str) else v}" for v in values)
    tensor = f"tensor {{ dtype: {kind} tensor_shape {{ {shape} }} {vals} }}"
    return node(name, "Const", attrs=dtype("dtype", kind) + " " + _attr("value", tensor))


def call(name: str, function: str, *inputs: str, op: str = "PartitionedCall", n_in: int = 1) -> str:
    """A call of a library function: op "PartitionedCall"/"StatefulPartitionedCall", or op=function (direct)."""
    if op == function:
        return node(name, function, *inputs)
    types = " ".join(f"type: {F32}" for _ in range(n_in))
    attrs = " ".join([_attr("Tin", f"list {{ {types} }}"), _attr("Tout", f"list {{ type: {F32} }}"),
                      _attr("f", f"func {{ name: {q(function)} }}")])
    return node(name, op, *inputs, attrs=attrs)


def function(name: str, body: list[str], ret: str, args=("x",)) -> str:
    """A FunctionDef taking float ``args`` and returning one float ``y`` = ``ret`` ("node:output_arg:0")."""
    ins = " ".join(f"input_arg {{ name: {q(a)} type: {F32} }}" for a in args)
    nodes = " ".join(b.replace("node {", "node_def {", 1) for b in body)
    return (f"function {{ signature {{ name: {q(name)} {ins} output_arg {{ name: \"y\" type: {F32} }} }} "
            f"{nodes} ret {{ key: \"y\" value: {q(ret)} }} }}")


def graph(nodes: list[str], functions: list[str] = ()) -> bytes:
    text = "\n".join(nodes)
    if functions:
        text += "\nlibrary {\n" + "\n".join(functions) + "\n}"
    return (text + "\nversions { producer: 1882 }\n").encode()


def unary(name: str, op: str, source: str) -> str:
    return node(name, op, source, attrs=dtype())


def binary(name: str, op: str, a: str, b: str) -> str:
    return node(name, op, a, b, attrs=dtype())


def write_file(name: str = "WriteFile", target: str = "/tmp/explorer-hostile-written") -> list[str]:
    """A WriteFile node and the two string constants it reads."""
    return [const(name + "/path", [target], dims=[], kind="DT_STRING"),
            const(name + "/text", ["owned"], dims=[], kind="DT_STRING"),
            node(name, "WriteFile", name + "/path", name + "/text")]


def good(scale: float = 2.0) -> bytes:
    """x[2] -> Mul by a constant -> Relu: a harmless model that runs."""
    return graph([placeholder(), const("w", [scale, scale]), binary("m", "Mul", "x", "w"), unary("y", "Relu", "m")])
