"""DOT for the big-graph views of analysis/scope.py: scopes collapsed into boxes, and fused regions only.

Both build on ``dot.to_dot`` (same ids, statuses and folding), overriding how boxes, dimmed
neighbours and elided-edge markers look.
"""

from __future__ import annotations

from ..analysis import scope
from ..analysis.scope import ELIDED_OP, Collapsed, Region
from ..model.graph import INPUT_OPS
from .dot import COUNTED, FOLDED_OPS, FUSED_TEXT, PALETTE, rows_label, small_row, to_dot
from .dot_text import html_text, quoted, shorten, visible

BOX_OPS_SHOWN = 3  # op types named in a box's label; the tooltip has them all


def _ops_text(ops, fold: bool, limit: int | None = None) -> tuple[int, str]:
    """How many ops a box holds and which (its arguments, a layer's variables, are counted apart)."""
    kept = [(op, k) for op, k in ops if not (fold and op in FOLDED_OPS) and op not in INPUT_OPS]
    total = sum(k for _, k in kept)
    shown = kept if limit is None else kept[:limit]
    text = ", ".join(f"{op}×{k}" if k > 1 else op for op, k in shown)
    if limit is not None and len(kept) > limit:
        text += ", …"
    return total, text


def box_attrs(box, prefix: tuple[str, ...], fold: bool, shared_consts: int = 0) -> dict[str, str]:
    """A box: its scope (without the shared prefix), how many ops it holds and which, its fused nodes."""
    total, short = _ops_text(box.ops, fold, BOX_OPS_SHOWN)
    _, every = _ops_text(box.ops, fold)
    fused = box.fused
    args = sum(k for op, k in box.ops if op in INPUT_OPS)
    count = f'{total} op{"s" if total != 1 else ""}' + (f" · {args} argument{'s' if args != 1 else ''}" if args else "")
    rows = [f"<b>{html_text(shorten(box.short(prefix)))}</b>", f'<font point-size="9">{count} ▸</font>']
    if short:
        rows.append(small_row(short))
    if fused:
        rows.append(small_row(f"fused: {shorten(', '.join(fused), 40)}", FUSED_TEXT))
    if shared_consts:
        rows.append(small_row(f"+{shared_consts} shared const", COUNTED))
    style = PALETTE.get(box.status, PALETTE["unchanged"])
    tip = [box.scope + "/", f"scope of {len(box.members)} nodes ({total} drawn when opened)", f"status: {box.status}",
           f"ops: {every}"]
    tip += [f"arguments (variables, inputs): {args}"] if args else []
    tip += [f"fused: {', '.join(fused)}"] if fused else []
    tip += [f"reads {shared_consts} constant(s) held in another box (not drawn)"] if shared_consts else []
    tip.append("open it with 'Open scopes' above")
    return {
        "label": rows_label(rows),
        "tooltip": quoted("\n".join(visible(t) for t in tip)),
        "shape": "box3d", "style": quoted("filled" + (",bold" if box.status == "fused" else "")
                                           + (",dashed" if box.status == "absorbed" else "")),
        "fillcolor": quoted(style.fill), "color": quoted(style.border), "penwidth": str(max(style.penwidth, 1.4)),
        "class": quoted("fx-box"),
    }


def collapsed_dot(c: Collapsed, prefix: tuple[str, ...], *, fold: bool = False,
                  clusters=None, id_prefix: str = "") -> str:
    """DOT of a collapsed graph; an edge between two drawn nodes that stands for several says how many."""
    node_attrs = {name: box_attrs(box, prefix, fold, c.shared_consts.get(name, 0)) for name, box in c.boxes.items()}
    edge_attrs = {pair: {"label": quoted(f"×{k}"), "fontcolor": quoted("#777777")}
                  for pair, k in c.edge_counts.items() if k > 1}
    return to_dot(c.graph, c.overlay, fold_boilerplate=fold, clusters=clusters, id_prefix=id_prefix,
                  node_attrs=node_attrs, edge_attrs=edge_attrs)


DIM = {"fillcolor": quoted("#f7f7f7"), "color": quoted("#c4c4c4"), "fontcolor": quoted("#8a8a8a"),
       "class": quoted("fx-context")}


def region_dot(r: Region, overlay: dict[str, str], *, fold: bool = False, clusters=None, id_prefix: str = "") -> str:
    """DOT of a region: its neighbours dimmed, each marker a small "⋯ N" joined by a dotted edge."""
    node_attrs = {name: dict(DIM) for name in r.context}
    edge_attrs = {}
    for n in r.graph.nodes:
        if n.op != ELIDED_OP:
            continue
        k = r.elided[n.name]
        node_attrs[n.name] = {
            "label": quoted(f"⋯ {k}"), "shape": "plaintext", "fontcolor": quoted("#8a8a8a"), "fontsize": "9",
            "tooltip": quoted(f"{k} edge{'s' if k != 1 else ''} to nodes this view leaves out"),
            "class": quoted("fx-elided")}
        for e in n.inputs:  # a marker of hidden consumers
            edge_attrs[(e.src, n.name)] = {"style": "dotted", "color": quoted("#aaaaaa"), "arrowhead": "none"}
    for n in r.graph.nodes:
        for e in n.inputs:
            if e.src in r.elided:  # a marker of hidden inputs
                edge_attrs[(e.src, n.name)] = {"style": "dotted", "color": quoted("#aaaaaa"), "arrowhead": "none"}
    return to_dot(r.graph, overlay, fold_boilerplate=fold, clusters=clusters, id_prefix=id_prefix,
                  node_attrs=node_attrs, edge_attrs=edge_attrs)


# ---- one stage pair, in one of the views -----------------------------------------------------

VIEWS = ("all", "scopes", "fused")
LARGE = 300  # more drawn nodes than this (after folding, when folding) open as boxes by default


def drawn_count(graph, fold: bool) -> int:
    """Nodes the full drawing of ``graph`` would have (folding hides FOLDED_OPS)."""
    return sum(1 for n in graph.nodes if not (fold and n.op in FOLDED_OPS))


def resolve_view(view: str, before, after, fold: bool) -> str:
    """"auto" is boxes for a graph of more than LARGE drawn nodes, every node otherwise."""
    if view in VIEWS:
        return view
    return "scopes" if max(drawn_count(before, fold), drawn_count(after, fold)) > LARGE else "all"


def view_pair(before, after, diff, view: str, *, fold: bool = False, depth: int = 1, opened=()) -> dict:
    """DOT of both sides in a view other than "all", plus what the page needs beside it.

    ``drawn_of`` maps, per side, each original node that is not drawn as itself to what stands for
    it (its box); in the fused view it lists the nodes left out, mapped to None.
    """
    overlays = (diff.overlay("before"), diff.overlay("after"))
    clusters = (diff.clusters("before"), diff.clusters("after"))
    prefix = scope.common_prefix(before, after)
    out = {"view": view, "prefix": list(prefix), "max_depth": scope.max_depth(prefix, before, after), "boxes": []}
    if view == "scopes":
        pair = scope.collapse_pair(before, after, depth, frozenset(opened), overlays)
        for side, c, cl, pre in zip(("before", "after"), pair, clusters, ("b-", "a-")):
            out[side] = collapsed_dot(c, prefix, fold=fold, clusters=cl, id_prefix=pre)
            out.setdefault("drawn_of", {})[side] = dict(c.box_of)
            out.setdefault("drawn", {})[side] = drawn_count(c.graph, fold)
        scopes = {b.scope: b.short(prefix) for c in pair for b in c.boxes.values()}
        out["boxes"] = sorted(scopes.items(), key=lambda kv: kv[1])
        return out
    if view != "fused":
        raise ValueError(f"view must be one of {VIEWS}, not {view!r}")
    data = diff.to_dict()
    for side, g, o, cl, pre in zip(("before", "after"), (before, after), overlays, clusters, ("b-", "a-")):
        r = scope.region(g, scope.fusion_core(data, side), FOLDED_OPS if fold else frozenset())
        out[side] = region_dot(r, o, fold=fold, clusters=cl, id_prefix=pre)
        shown = set(r.core) | set(r.context)
        out.setdefault("drawn_of", {})[side] = {n.name: None for n in g.nodes if n.name not in shown}
        out.setdefault("drawn", {})[side] = drawn_count(r.graph, fold)
        out.setdefault("core", {})[side] = len(r.core)
    return out
