"""Which graph rewrites apply to a model's near-misses, and what each did, in the words a user acts on.

A rewrite is offered for a near-miss kind when it keeps the maths (``worker.rewrite``'s modules say
why for each); the other kinds (an activation the remapper does not fuse after that contraction, a layer
norm, an Einsum) have no such rewrite and are not offered one. ``freeze`` applies to any model that
reads variables outside its loops and branches. After the engine has run the fixed copies (``engine.fixes``),
``resolved`` says which near-misses of the model as imported each copy fused: the chains that fix changed.
"""

from __future__ import annotations

from ..errors import SpecError
from .model_report import IN_BODY, layer_of, shared_scope

# fix -> the near-miss kinds it rewrites (freeze: none in particular; it applies to any model with variables)
FIXES = {
    "bias-add": ("bias-as-add", "second-bias"),
    "bias-before-reshape": ("reshape-before-bias",),
    "dilated-conv": ("dilated-as-space-to-batch",),
    "squeeze-after-activation": ("activation-after-squeeze",),
    "fold-batchnorm": ("batchnorm-as-arithmetic",),
    "freeze": (),
}
NOT_OFFERED = ("activation-left-out", "gelu-left-out", "activation-without-bias", "layernorm-as-arithmetic",
               "einsumdense-batchmatmul", "einsum", "unfused-pattern", "attention-scores")


def variable_reads(result: dict) -> list[str]:
    """The traced graph's reads of a variable (ReadVariableOp, ResourceGather), by node name."""
    traced = (result.get("stages") or {}).get("traced") or {}
    return [n["name"] for n in traced.get("nodes", ()) if n["op"] in ("ReadVariableOp", "ResourceGather")]


def has_variables(result: dict) -> bool:
    return bool(variable_reads(result))


def _freeze_skipped(result: dict) -> str | None:
    """Why freeze does not apply, or None: it turns the reads of the model's own graph into constants, and a loop's
    body or a branch stays a function of its own, whose reads it leaves as they are."""
    reads = variable_reads(result)
    if not reads:
        return "the model reads no variables: its weights are constants already"
    if all(IN_BODY.search(name) for name in reads):
        return "the model reads its variables only inside its loops' or branches' functions, which freeze leaves as they are"
    return None


def choose(result: dict, requested: list[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """(the fixes to apply, in order; {fix: why it is not applied}) for an inspect result. ``requested``
    None: every fix that has something to rewrite."""
    unknown = [name for name in requested or () if name not in FIXES]
    if unknown:
        raise SpecError("--apply", f"no fix {unknown[0]!r}; the fixes are {', '.join(FIXES)}")
    taken = taken_by(((result.get("report") or {}).get("near_misses") or ()))
    chosen, skipped = [], {}
    for name, wanted in FIXES.items():
        if requested is not None and name not in requested:
            continue
        if name == "freeze":
            why = _freeze_skipped(result)
            if why is None:
                chosen.append(name)
            else:
                skipped[name] = why
        elif taken.get(name) or requested is not None:
            chosen.append(name)  # asked for by name: run, and say what it found
        else:
            skipped[name] = f"no near-miss of kind {', '.join(wanted)}"
    return chosen, skipped


def taken_by(misses) -> dict[str, int]:
    """{fix: how many of ``misses`` it rewrites} for the fixes of some near-miss kinds (freeze has none); a chain of
    two forms (``also``: a dilated convolution's batch norm) counts for both its fixes."""
    return {name: sum(1 for m in misses if {m["kind"], *m.get("also", ())} & set(kinds))
            for name, kinds in FIXES.items() if kinds}


def variants(fixes: list[str]) -> list[dict]:
    """The copies to make: all the fixes together ("all"), and each alone when there are several."""
    out = [{"name": "all", "fixes": list(fixes)}]
    if len(fixes) > 1:
        out += [{"name": name, "fixes": [name]} for name in fixes]
    return out


def resolved(before: list[dict], after: list[dict], fusions: list[dict] | None = None) -> list[dict]:
    """Near-misses of ``before`` none of whose nodes is in a near-miss of ``after``, and (given the fixed model's
    ``fusions``) whose contraction a fused op of it absorbed: fused, not merely gone (a zero bias that freezing let
    constant folding remove takes the near-miss with it, and nothing fuses). A fixed SavedModel's nodes sit one
    call scope deeper ("StatefulPartitionedCall/" + the original's name): a node matches a name it ends with."""
    left = _names_and_tails(name for miss in after for name in miss["nodes"])
    fused = None if fusions is None else _names_and_tails(
        name for f in fusions for name in [f["node"], *(f.get("absorbed") or ())])
    return [m for m in before if not left & set(m["nodes"]) and (fused is None or m["nodes"][0] in fused)]


def _names_and_tails(names) -> set[str]:
    out: set[str] = set()
    for name in names:
        parts = name.split("/")
        out.update("/".join(parts[i:]) for i in range(len(parts)))
    return out


def chain_of(miss: dict) -> dict:
    return {"kind": miss["kind"], "chain": miss["chain"], "nodes": list(miss["nodes"]),
            **({"time_ms": miss["time_ms"], "share": miss["share"]} if "time_ms" in miss else {})}


def layers(misses: list[dict], scope: str = "", limit: int = 6) -> str:
    """'conv1, block_1_expand (and 30 more)': the layers of some near-misses, without ``scope`` (the one the
    model's near-misses all share, ``model_report.shared_scope``)."""
    names = list(dict.fromkeys(layer_of(m["nodes"][0]) for m in misses))
    short = [n[len(scope):] if scope and n.startswith(scope) else n for n in names]
    more = f" (and {len(short) - limit} more)" if len(short) > limit else ""
    return ", ".join(short[:limit]) + more


def scope_of(misses: list[dict]) -> str:
    return shared_scope([layer_of(m["nodes"][0]) for m in misses])


def advice(fix: str, chains: list[dict], scope: str = "", keras: bool = True) -> str:
    """The sentence a user acts on for one applied fix: where, in their own code, to make the change."""
    where = layers(chains, scope)
    at = f" ({where})" if where else ""
    if fix == "fold-batchnorm":
        return (f"Fold each batch norm into the layer before it when you export for inference{at}: "
                "w' = w·γ/√(σ²+ε) per output channel, b' = (b − μ)·γ/√(σ²+ε) + β, set on that layer with "
                "use_bias=True, and drop the BatchNormalization layer from the exported model"
                + (" (Keras 3 writes it as Mul and AddV2, which no remapper pattern takes)" if keras else "")
                + "; or serve the fixed model written here.")
    if fix == "bias-add":
        said = []
        for kind, words in (("bias-as-add", "Add the bias with tf.nn.bias_add(x, b) instead of x + b after the "
                                            "contraction{at}: the remapper fuses a BiasAdd, not a broadcast AddV2 "
                                            "(without oneDNN)."),
                            ("second-bias", "Add one bias after the contraction, not two{at}: tf.nn.bias_add(x, b1 + b2), "
                                            "so that the activation follows it and joins the fused op.")):
            mine = [c for c in chains if c["kind"] == kind]
            if mine or (kind == "bias-as-add" and not chains):
                where = layers(mine, scope)
                said.append(words.format(at=f" ({where})" if where else ""))
        return " ".join(said)
    if fix == "bias-before-reshape":
        return (f"Apply the Dense to a 2-D tensor{at}: reshape [batch, tokens, features] to "
                "[batch·tokens, features] before it and back after, so its bias follows the MatMul directly.")
    if fix == "dilated-conv":
        return (f"Write each dilated convolution{at} as one Conv2D with dilations: tf.nn.conv2d(x, filters, 1, padding, "
                "dilations=rate) (tf.nn.conv1d for a Conv1D) where Keras's dilation_rate goes through "
                "tf.nn.convolution's SpaceToBatchND and BatchToSpaceND; or serve the fixed model written here.")
    if fix == "squeeze-after-activation":
        return (f"Apply each Conv1D's activation before squeezing its output back to 1-D{at}: write it as a Conv2D "
                "with a (1, k) kernel on a [batch, 1, steps, channels] tensor, or keep the model 4-D through its "
                "Conv1D layers, so that Conv2D → BiasAdd → activation is one fused op; or serve the fixed model "
                "written here.")
    if fix == "freeze":
        return ("Serve a frozen graph: convert the serving function's variables to constants "
                "(tf.python.framework.convert_to_constants.convert_variables_to_constants_v2, as converters "
                "and frozen-graph servers do), so Grappler's constant folding and oneDNN can fold the weights.")
    return ""
