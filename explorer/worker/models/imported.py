"""Builder of an imported model: a user's GraphDef, SavedModel or .keras file as a tf.function body.

Nothing of the model executes before ``worker.safety`` has checked it. Each load works in a
temporary directory of its own, under the request's folder (which the parent removes whatever
happens to the worker): a SavedModel directory's regular files copied, a SavedModel zip or a .keras
file unpacked by the explorer under the one archive policy (``model.archive``), Keras given the
checked copy. The directory is removed as soon as the model is in memory. The body keeps the model's ops in the
traced graph itself (not behind a call node), so the three stages, the fusion mapping and the
fused-vs-unfused benchmark see the same graph a preset gives them:

- GraphDef: imported inline with ``import_graph_def``, its Placeholders fed by the arguments;
- SavedModel: the chosen signature's nested calls inlined, imported inline like a GraphDef with
  its variables read live (not frozen: freezing changes what Grappler and oneDNN fuse);
- .keras: loaded with ``safe_mode=True``, its call traced once as the user's own Keras code would be, and
  imported inline like a SavedModel's signature (its variables captured live).
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ...errors import SpecError, shown
from ...model import archive, formats
from ...model.formats import EXPECTED
from ...model.imported import DEFAULT_SIGNATURE
from ...model.spec import MAX_MODEL_BYTES, MAX_TENSOR_BYTES
from .. import safety
from . import naming
from . import signature as signature_reader

SEED = 20261122
FUNCTION_ATTRIBUTES = "explorer_function_attributes"  # on a body: tf.function's experimental_attributes for it
GRAPH = "explorer_graph"  # on a body that imports a graph: (GraphDef, feeds, outputs, handles), for GraphFunction
# On an imported body: its inputs as declared [(shape with None for an unknown dimension, tf dtype)], so that
# models.function can trace it as TensorFlow serves it (unknown stays unknown; values fed only to run).
DECLARED = "explorer_declared_inputs"
# On an imported body whose loops the inlining lowered: () -> the body of the same graph with them left functional,
# for XLA (tf.function(jit_compile=True) compiles a While, not the Enter/Exit it is lowered to).
UNLOWERED = "explorer_unlowered_body"
KEEP = 2  # loaded models kept warm per worker (an inspect and then a benchmark of the same file)


@dataclass
class Loaded:
    body: object  # callable(*tensors) -> list of tensors
    inputs: list  # [(name, shape with None for unknown dims, tf dtype)]
    info: dict = field(default_factory=dict)
    keepalive: object = None  # the Keras model: its variables live as long as it does
    functions: list = field(default_factory=list)  # its library's functions, under its own names (naming)


_LOADED: OrderedDict[str, Loaded] = OrderedDict()


def load(spec, tf) -> Loaded:
    key = json.dumps({k: v for k, v in spec.identity()["import"].items() if k not in ("unknown_dim", "fixed_dims")},
                     sort_keys=True)
    if key in _LOADED:
        _LOADED.move_to_end(key)
        return _LOADED[key]
    if not spec.path or not os.path.exists(spec.path):
        raise SpecError("import.path", f"the model file {spec.name or spec.path!r} is no longer there; give it again")
    with tempfile.TemporaryDirectory(prefix="explorer-model-") as work:
        loaded = {"graphdef": _graphdef, "savedmodel": _savedmodel, "keras": _keras}[spec.format](spec, tf, work)
    _LOADED[key] = loaded
    while len(_LOADED) > KEEP:
        _, evicted = _LOADED.popitem(last=False)
        naming.release(evicted.functions, {name for kept in _LOADED.values() for name in kept.functions})
    return loaded


def inputs_made(spec) -> dict:
    """How ``make_inputs`` makes the inputs, in words (what the agreement check says it ran on)."""
    return {"seed": SEED, "how": f"numpy default_rng({SEED}): floats standard normal, integers uniform in 0..9, "
                                 f"booleans 0/1; unknown dimensions set to {spec.unknown_dim}"}


def make_inputs(spec, tf) -> dict:
    """Seeded inputs from the model's input specs, unknown dimensions set to ``spec.unknown_dim``."""
    loaded = load(spec, tf)
    rng = np.random.default_rng(SEED)
    out, total = {}, 0
    for name, shape, dtype in loaded.inputs:
        if shape is None:
            raise SpecError("model", f"input {name!r} has an unknown rank; the explorer needs its number of dimensions")
        dims = [spec.unknown_dim if d is None else d for d in shape]
        nbytes = int(np.prod(dims, dtype=np.float64)) * dtype.size
        total += nbytes
        if nbytes > MAX_TENSOR_BYTES or total > MAX_MODEL_BYTES:
            raise SpecError("import.unknown_dim", f"input {name!r} would be {' × '.join(map(str, dims))} {dtype.name}; "
                                                  f"the limit is {MAX_TENSOR_BYTES >> 20} MiB per tensor")
        if dtype.is_floating:
            data = rng.standard_normal(dims)
        elif dtype.is_integer:
            data = rng.integers(0, 10, size=dims)
        elif dtype == tf.bool:
            data = rng.integers(0, 2, size=dims).astype(bool)
        else:
            raise SpecError("model", f"input {name!r} is {dtype.name}; the explorer feeds numbers and booleans only")
        out[name] = tf.constant(data, dtype=dtype)
    return out


def build(spec, tf):
    loaded = load(spec, tf)
    if not spec.fixed_dims and any(shape is None or None in shape for _, shape, _ in loaded.inputs):
        setattr(loaded.body, DECLARED, [(shape, dtype) for _, shape, dtype in loaded.inputs])
    elif hasattr(loaded.body, DECLARED):
        delattr(loaded.body, DECLARED)
    return loaded.body, [name for name, _, _ in loaded.inputs]


def unknown_dims(spec, tf) -> bool:
    """Whether an input of the model leaves a dimension (or its rank) unknown."""
    return any(shape is None or None in shape for _, shape, _ in load(spec, tf).inputs)


def describe(spec, tf) -> dict:
    """What the page offers the user to choose: the model's inputs (None for an unknown dimension), the
    signatures of a SavedModel and the one called, and the outputs."""
    loaded = load(spec, tf)
    info = loaded.info
    return {"format": info.get("format"), "signature": info.get("signature"), "signatures": info.get("signatures", []),
            "inputs": [{"name": name, "shape": shape, "dtype": dtype.name} for name, shape, dtype in loaded.inputs],
            "unknown_dim": spec.unknown_dim, "outputs": list(info.get("outputs") or [])[:64],
            "loader": info.get("loader")}


# ---- GraphDef ---------------------------------------------------------------------------------

def _parse_graphdef(name: str, data: bytes, tf):
    from google.protobuf import message, text_format

    graph_def = tf.compat.v1.GraphDef()
    text = data[:1].isascii() and data.lstrip()[:4] in (b"node", b"libr", b"vers") or data.lstrip()[:1] == b"#"
    try:
        if text:
            text_format.Parse(data.decode("utf-8", errors="strict"), graph_def)
        else:
            graph_def.ParseFromString(data)
    except (message.DecodeError, RuntimeWarning) as exc:
        raise SpecError(name, f"not a GraphDef: the file is truncated or not a binary protobuf ({shown(exc)}); "
                              f"{EXPECTED}") from None
    except (text_format.ParseError, UnicodeDecodeError) as exc:
        raise SpecError(name, f"not a GraphDef in text format ({shown(exc)}); {EXPECTED}") from None
    except RecursionError:
        raise SpecError(name, "a GraphDef in text format that nests deeper than the parser takes (a model's "
                              "text nests a few levels; this one thousands)") from None
    if not graph_def.node:
        raise SpecError(name, f"a GraphDef with no nodes (an empty or truncated file); {EXPECTED}")
    return graph_def


def _outputs_of(graph_def, tf) -> list[str]:
    """First output of every node nothing consumes (Const, Placeholder and no-output ops aside)."""
    from tensorflow.python.framework import op_def_registry

    used = {i.lstrip("^").split(":")[0] for n in graph_def.node for i in n.input}
    functions = {f.signature.name: f.signature for f in graph_def.library.function}
    outs = []
    for node in graph_def.node:
        if node.name in used or node.op in ("NoOp", "Placeholder", "Const", "Assert"):
            continue
        op_def = op_def_registry.get(node.op) or functions.get(node.op)
        if op_def is None or not op_def.output_arg:
            continue
        outs.append(node.name + ":0")
    return outs


def _inline(graph_def, inputs: list[str], outputs: list[str], tf, handles=(), unlowered=None, functions=None):
    """A body that imports the graph into the traced function, its inputs fed by the arguments and
    ``handles`` ([(placeholder tensor name, resource handle)]: a SavedModel's variables) captured.
    It carries the graph itself too (``GRAPH``): models.function calls that as a registered FunctionDef
    (graph_function.GraphFunction) and traces the body only when a Python graph is needed (XLA, the
    simulated GPU) or the graph is one that path does not take."""
    feeds = [name if ":" in name else name + ":0" for name in inputs]
    # The fed placeholders stay out of the trace: import_graph_def would keep them as dangling nodes,
    # which the runtime prunes but XLA's compile of the whole function refuses ("no XLA kernel for
    # Placeholder"). Their consumers are fed through input_map all the same.
    # Made when a trace runs: the usual call (GraphFunction) never needs this copy.
    fed = {name.split(":")[0] for name in feeds} | {inner.split(":")[0] for inner, _ in handles}

    def body(*args):
        traced_def = _without(graph_def, {n.name for n in graph_def.node if n.op == "Placeholder" and n.name in fed}, tf)
        graph = tf.compat.v1.get_default_graph()
        input_map = dict(zip(feeds, args))
        input_map.update({inner: graph.capture(handle) for inner, handle in handles})
        return tf.graph_util.import_graph_def(traced_def, input_map=input_map, return_elements=outputs, name="")
    # A body that only imports a GraphDef has no Python control flow for AutoGraph to rewrite, and
    # converting it costs ~0.2 s of a 1,600-node model's first graphs (a call per captured variable).
    body = tf.autograph.experimental.do_not_convert(_named(body))
    # The imported graph carries the control edges its exporter's trace gave it (and the inlined calls'
    # control outputs): TF's automatic control dependencies would add a second layer over every variable
    # read (262 control outputs, 525 edges on MobileNetV2) and cost ~0.1-0.2 s of its first graphs.
    setattr(body, FUNCTION_ATTRIBUTES, {"_disable_acd": True})
    setattr(body, GRAPH, (graph_def, feeds, outputs, list(handles)))
    if unlowered is not None:
        @functools.cache  # made once per loaded model: an XLA compile, its benchmark and a fix all ask for it
        def unlowered_body():
            graph = unlowered()
            # its functions under names of their own too (the model's trace registered the originals), released
            # with the model's (``functions``: the Loaded's list)
            functions.extend(name for name in naming.own_names(graph) if name not in functions)
            return _inline(graph, inputs, outputs, tf, handles)
        setattr(body, UNLOWERED, unlowered_body)
    return body


def _without(graph_def, names: set[str], tf):
    """A copy of ``graph_def`` without the nodes ``names``."""
    kept = tf.compat.v1.GraphDef()
    kept.library.CopyFrom(graph_def.library)
    kept.versions.CopyFrom(graph_def.versions)
    kept.node.extend(n for n in graph_def.node if n.name not in names)
    return kept


def _named(body):
    # The traced function is then __inference_model_*, the name by which Grappler's log and per-pass
    # dumps of the model are told from those of other functions (worker.grappler.MAIN_PREFIX).
    body.__name__ = "model"
    return body


def _graphdef_loaded(graph_def, outputs, tf, info) -> Loaded:
    by_name = {n.name: n for n in graph_def.node}
    if outputs:
        missing = [o for o in outputs if o.split(":")[0] not in by_name]
        if missing:
            raise SpecError("import.outputs", f"no node {missing[0]!r} in the graph")
        outputs = [o if ":" in o else o + ":0" for o in outputs]
    else:
        outputs = _outputs_of(graph_def, tf)
    if not outputs:
        raise SpecError("import.outputs", "the graph has no node whose output nothing consumes; name the outputs")
    # A Placeholder nothing consumes is no input: freezing a function whose loops captured tensors leaves one
    # ("unused_control_flow_input_N", often of unknown rank) per captured loop input.
    consumed = {i.lstrip("^").split(":")[0] for n in graph_def.node for i in n.input}
    unused = {n.name for n in graph_def.node if n.op == "Placeholder" and n.name not in consumed}
    if unused:
        graph_def = _without(graph_def, unused, tf)
    inputs = []
    for node in graph_def.node:
        if node.op != "Placeholder":
            continue
        dtype = tf.dtypes.as_dtype(node.attr["dtype"].type)
        shape_attr = node.attr["shape"].shape if "shape" in node.attr else None
        shape = None if shape_attr is None or shape_attr.unknown_rank else [d.size if d.size >= 0 else None
                                                                             for d in shape_attr.dim]
        inputs.append((node.name, shape, dtype))
    info.update(outputs=outputs, nodes=len(graph_def.node), functions=len(graph_def.library.function))
    functions = naming.own_names(graph_def)
    return Loaded(_inline(graph_def, [n for n, _, _ in inputs], outputs, tf), inputs, info, functions=functions)


def _graphdef(spec, tf, work: str) -> Loaded:
    name = spec.name or os.path.basename(spec.path)
    with open(spec.path, "rb") as handle:
        data = handle.read()
    graph_def = _parse_graphdef(name, data, tf)
    what = f"{shown(name)} (GraphDef)"
    safety.check_graphdef(graph_def, what).refuse_if_unsafe(what)
    return _graphdef_loaded(graph_def, list(spec.outputs), tf, {"format": "graphdef"})


# ---- SavedModel -------------------------------------------------------------------------------

def _savedmodel(spec, tf, work: str) -> Loaded:
    from google.protobuf import message
    from tensorflow.core.protobuf import saved_model_pb2
    name = spec.name or os.path.basename(os.path.normpath(spec.path))
    if os.path.isdir(spec.path):
        root = os.path.join(work, "model")
        os.mkdir(root, 0o700)
        archive.copy_directory(spec.path, root, name)  # regular files only: links, pipes and devices refused
    else:
        archive.unpack_zip(spec.path, work, name)
        root = formats.savedmodel_root(work, name)
    proto = saved_model_pb2.SavedModel()
    try:
        with open(os.path.join(root, "saved_model.pb"), "rb") as handle:
            proto.ParseFromString(handle.read())
    except message.DecodeError as exc:
        raise SpecError(name, f"saved_model.pb is truncated or not a SavedModel ({exc})") from None
    names = sorted(s for m in proto.meta_graphs[:1] for s in m.signature_def if not s.startswith("__"))
    # serving_default when there is one, else the first by name (the page then offers the others).
    signature = spec.signature or (DEFAULT_SIGNATURE if DEFAULT_SIGNATURE in names or not names else names[0])
    what = f"{shown(name)} (SavedModel)"
    report = safety.check_saved_model(proto, signature, what)
    report.refuse_if_unsafe(what)
    try:
        sig = signature_reader.read(proto, root, signature, tf)
    except signature_reader.Unsupported as exc:
        sig = signature_reader.load(root, signature, tf, str(exc))
    what = f"{shown(name)} (signature {shown(signature)}, inlined)"
    safety.check_graphdef(sig.graph_def, what).refuse_if_unsafe(what)
    info = {"format": "savedmodel", "signature": signature, "outputs": sig.outputs, "nodes": len(sig.graph_def.node),
            "signatures": names, "loader": sig.loader, "saver_functions_not_run": report.saver_functions}
    functions = naming.own_names(sig.graph_def)
    return Loaded(_inline(sig.graph_def, sig.feeds, sig.outputs, tf, sig.handles, sig.unlowered, functions), sig.inputs, info,
                  keepalive=sig.keepalive, functions=functions)


# ---- .keras -----------------------------------------------------------------------------------

def _keras(spec, tf, work: str) -> Loaded:
    import keras

    name = spec.name or os.path.basename(spec.path)
    # Unpacked here, under the archive policy, into the request's own folder: Keras, given the .keras file,
    # would extract its members itself (past every limit, into the system's temporary folder).
    root = os.path.join(work, "model")  # a directory, not a name ending in .keras: Keras reads it as unpacked
    os.mkdir(root, 0o700)
    archive.unpack_zip(spec.path, root, name, archive.KERAS_MEMBERS)
    missing = sorted(formats.KERAS_REQUIRED - set(os.listdir(root)))
    if missing:
        raise SpecError(name, f"not a .keras file: {', '.join(missing)} missing; {EXPECTED}")
    what = f"{shown(name)} (.keras)"
    safety.check_keras_config(os.path.join(root, "config.json"), what).refuse_if_unsafe(what)
    safety.check_keras_weights(os.path.join(root, "model.weights.h5"), what)
    try:
        model = keras.saving.load_model(root, safe_mode=True, compile=False)
    except Exception as exc:  # noqa: BLE001 - Keras' own words for what it refused
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SpecError(name, f"Keras refused the file in safe mode: {shown(first, 400)}") from None
    inputs = [(t.name, list(t.shape), tf.as_dtype(t.dtype)) for t in model.inputs]

    def call(*args):
        out = model(args[0] if len(args) == 1 else list(args), training=False)
        return list(out) if isinstance(out, (list, tuple)) else (
            [out[k] for k in sorted(out)] if isinstance(out, dict) else [out])

    # Traced once into a SavedModel signature's flat form: its loops lowered into the traced graph as the runtime
    # lowers them, so that what fuses in a loop's body (an LSTM's cell) is mapped like every other fusion.
    graph_def, feeds, outputs, handles, concrete, unlowered = signature_reader.traced(call, inputs, tf)
    functions = naming.own_names(graph_def)
    return Loaded(_inline(graph_def, feeds, outputs, tf, handles, unlowered, functions), inputs, {"format": "keras", "layers": len(model.layers)},
                  keepalive=(model, concrete), functions=functions)
