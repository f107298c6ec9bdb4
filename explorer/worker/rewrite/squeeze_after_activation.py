"""squeeze-after-activation: a Conv1D's Squeeze moved after its bias and activation.

TensorFlow computes a 1-D convolution (Keras' Conv1D, tf.nn.conv1d) as a Conv2D on an expanded tensor, squeezed
back to 1-D: ``Conv2D → Squeeze → BiasAdd → activation``. The remapper's pattern for it (Conv2D + Squeeze + BiasAdd)
takes no activation, so the activation runs as an op of its own, on CPU with and without oneDNN. Adding the bias
and applying the activation before the Squeeze is the same maths, element for element (the squeezed axis has size
1 and is not the channel axis the bias is added along); then ``Conv2D → BiasAdd → activation`` is the remapper's
own pattern, and one Squeeze follows. The fused kernel may round in another order (measured: 1e-7 apart). The nodes keep their names; what read the activation reads the
Squeeze.

Left alone: a channels-first Conv2D or BiasAdd, a Squeeze of the channel axis, an activation the remapper does not
fuse after a Conv2D (Tanh, Sigmoid: nothing would fuse), an intermediate read by anything else, control edges.
"""

from __future__ import annotations

from ...analysis.preconditions import STOCK_ACTS
from .fold_batchnorm import _only
from .model import Model, attr, each_site

NAME = "squeeze-after-activation"


def find(model: Model) -> list[dict]:
    users = model.consumers()
    sites = []
    for conv in list(model.graph_def.node):
        if conv.op != "Conv2D":
            continue
        squeeze = _only(users, conv.name)
        bias = _only(users, squeeze.name) if squeeze is not None and squeeze.op == "Squeeze" else None
        act = _only(users, bias.name) if bias is not None and bias.op == "BiasAdd" else None
        if act is None or act.op not in STOCK_ACTS or bias.input[0].split(":")[0] != squeeze.name:
            continue
        dims = set(attr(squeeze, "squeeze_dims").list.i)
        why = None
        if attr(conv, "data_format").s not in (b"", b"NHWC") or attr(bias, "data_format").s not in (b"", b"NHWC"):
            why = "the convolution is channels-first"
        elif not dims or dims & {3, -1}:
            why = f"the Squeeze (axes {sorted(dims) or 'all of size 1'}) may take the channel axis"
        elif any(model.has_control_edges(n) for n in (squeeze.name, bias.name, act.name)):
            why = "the Squeeze, the bias or the activation has control edges"
        sites.append({"nodes": [conv.name, squeeze.name, bias.name, act.name], "conv": conv.name,
                      "squeeze": squeeze.name, "bias": bias.name, "act": act.name, "why": why})
    return sites


def apply(model: Model, targets: set[str] | None = None) -> tuple[list[dict], list[dict]]:
    return each_site(find(model), targets, "conv", lambda site: _rewrite(model, site))


def _rewrite(model: Model, site: dict) -> list[str]:
    nodes = model.nodes()
    squeeze, bias = nodes[site["squeeze"]], nodes[site["bias"]]
    model.reroute(f"{site['act']}:0", f"{site['squeeze']}:0")  # what read the activation reads the Squeeze...
    bias.input[0] = squeeze.input[0]  # ...the bias is added to the Conv2D's output...
    squeeze.input[0] = f"{site['act']}:0"  # ...and the Squeeze comes last
    model.forget_shapes([site["bias"], site["act"], site["squeeze"]])  # recorded for the 1-D shapes
    return []
