"""Near-misses of batched products: EinsumDense's BatchMatMulV2 with a bias (no remapper pattern takes one),
attention's scores × scale + mask (what oneDNN's _MklFusedBatchMatMulV2 needs of them) and Einsum (no pattern).
"""

from __future__ import annotations

from ..model.chain import Chain
from ..model.graph import Graph, Node
from .near_miss_rules import Where, record, rules


def batch_matmul(node: Node, outs: list[Node], users: dict, graph: Graph, where: Where) -> list[dict]:
    if len(outs) != 1:
        return []
    nxt, names = outs[0], [node.name, outs[0].name]
    if nxt.op == "Mul":
        return _attention_scores(node, nxt, users, graph, where)
    if nxt.op == "Reshape":
        after = [c for c in users.get(nxt.name, ()) if c.op in ("BiasAdd", "AddV2", "Add")]
        if not after:
            return []
        names.append(after[0].name)
        form = f"{node.op} → Reshape → {after[0].op} (EinsumDense: a projection with a bias)"
    elif nxt.op in ("BiasAdd", "AddV2", "Add"):
        form = f"{node.op} → {nxt.op} (EinsumDense: a projection with a bias)"
    else:
        return []
    return [record("einsumdense-batchmatmul", names, f"{node.op} + bias", form,
                   "a 2-D MatMul directly followed by BiasAdd: the remapper fuses no bias into BatchMatMulV2 "
                   "(oneDNN's _MklFusedBatchMatMulV2 takes BatchMatMulV2×scale + a rank-4 addend only)",
                   "write the projection as a Dense on a 2-D tensor (reshape to [batch × tokens, features]), "
                   "whose MatMul+BiasAdd fuses")]


def _other(node: Node, source: str, graph: Graph) -> Node | None:
    """The other input of a binary op ``node`` than ``source``'s output."""
    others = [graph.get(e.src) for e in node.data_inputs if e.src != source]
    return others[0] if len(others) == 1 else None


def _attention_scores(node: Node, mul: Node, users: dict, graph: Graph, where: Where) -> list[dict]:
    """BatchMatMulV2 × scale + addend (attention's scores and their mask), left unfused: oneDNN's
    _MklFusedBatchMatMulV2 [Mul, Add] takes a scalar scale, a rank-4 product and a rank-4 addend whose second
    dimension is 1 (a mask broadcast over the heads). Named only where a condition read here fails."""
    after = users.get(mul.name, ())
    scale, add = _other(mul, node.name, graph), after[0] if len(after) == 1 else None
    if scale is None or add is None or add.op not in ("AddV2", "Add"):
        return []
    addend = _other(add, mul.name, graph)
    needs, candidates, code = rules(Chain(kind="batch_matmul_scale_add"), node, where, graph)
    addend_shape = addend.shape if addend is not None else ""
    product, factor, added = node.dims, scale.dims, addend.dims if addend is not None else None
    if factor and any(d != "1" for d in factor):
        needs.append(f"a scalar scale (here {scale.shape})")
        code.append("scale by a scalar")
    if product is not None and len(product) != 4:
        needs.append(f"a rank-4 product, [batch, heads, queries, keys] (here {node.shape})")
        code.append("compute the scores as a rank-4 tf.matmul, [batch, heads, queries, keys]")
    if added is not None and (len(added) != 4 or added[1] != "1"):
        needs.append(f"an addend of rank 4 whose second dimension is 1, [batch, 1, queries, keys] (here {addend_shape})")
        code.append("give the mask the shape [batch or 1, 1, queries, keys] before the add (tf.reshape(mask, "
                    "[1, 1, queries, keys]) for a [queries, keys] one), so one mask serves every head")
    if not needs:
        return []  # every condition read here holds: nothing to name
    return [record("attention-scores", [node.name, mul.name, add.name], f"{node.op} × scale + mask",
                   f"{node.op} → Mul (scale) → {add.op} (attention's scores and mask)", "; ".join(needs),
                   "; ".join(code) or "none in this configuration", candidates)]


def einsum(node: Node) -> dict:
    return record("einsum", [node.name], "Einsum", f"Einsum ({node.attr.get('equation', 'a contraction')})",
                  "a MatMul or BatchMatMulV2: the remapper has no pattern for Einsum, which stays unfused "
                  "(counted with the unfused contractions)",
                  "write it as tf.matmul (attention: BatchMatMulV2 × scale + mask fuses into "
                  "_MklFusedBatchMatMulV2 with oneDNN)")
