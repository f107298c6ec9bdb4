"""Big graphs made small: name scopes collapsed into boxes, search, and the regions a diff touched.

Pure functions over the neutral graph; ``present/scope_dot.py`` draws what they return.

A node's *scope* is its name without the last part ("model/conv2d_3/Conv2D" is in
"model/conv2d_3"). Scopes are counted below the prefix every scoped node of both graphs shares
(a Keras model's own name), so depth 1 is one box per Keras layer. The box of a scope is named
``scope + "/"``: no TF node name ends with "/", so a box never collides with a node, and the same
scope gets the same box name (and element id) on both sides of a diff.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ..model.graph import BOILERPLATE_OPS, Edge, Graph, Node
from .fusion import CONST_OPS

SCOPE_OP = "(scope)"  # the op of a box node in a collapsed graph
ELIDED_OP = "(elided)"  # the op of a marker standing for edges a region view leaves out
# Status of a box: the most telling status of what it holds, in this order.
STATUS_ORDER = ("fused", "absorbed", "changed", "removed", "added", "unchanged")
SEP = "/"
# The plumbing TensorFlow's function inlining adds around an inlined call: "Func/<call>/input/_7" and the like.
INLINED = re.compile(r"Func/(.+)/(?:input|output|input_control_node|output_control_node)/_\d+")


def scope_path(name: str) -> tuple[str, ...]:
    """The scopes a node name sits in, outermost first: "a/b/c" -> ("a", "b"). An inlined call's plumbing sits in
    the call it feeds ("Func/model/lstm/while/body/_5/input/_9" in "model/lstm/while/body/_5"), so a loop's or a
    branch's dozens of Identity and NoOp nodes go in its layer's box rather than around it."""
    inlined = INLINED.fullmatch(name)
    return tuple(inlined.group(1).split(SEP)) if inlined else tuple(name.split(SEP)[:-1])


def common_prefix(*graphs: Graph) -> tuple[str, ...]:
    """The scope path every compute node of every graph shares (a Keras model's name; the function's
    arguments, constants and plumbing do not count), shortened until at least two scopes lie one
    level below it: a graph of MatMul, BiasAdd and a "Gelu" scope gets a "Gelu" box."""
    prefix: tuple[str, ...] | None = None
    for graph in graphs:
        for n in graph.nodes:
            if n.op in BOILERPLATE_OPS:
                continue
            path = scope_path(n.name)
            if prefix is None:
                prefix = path
                continue
            k = 0
            while k < min(len(prefix), len(path)) and prefix[k] == path[k]:
                k += 1
            prefix = prefix[:k]
    prefix = prefix or ()
    while prefix:
        below = {scope_path(n.name)[:len(prefix) + 1] for g in graphs for n in g.nodes}
        if len({p for p in below if len(p) > len(prefix) and p[:len(prefix)] == prefix}) >= 2:
            break
        prefix = prefix[:-1]
    return prefix


def max_depth(prefix: tuple[str, ...], *graphs: Graph) -> int:
    """How many scope levels lie below the prefix (0: nothing to collapse)."""
    return max((len(scope_path(n.name)) - len(prefix) for g in graphs for n in g.nodes), default=0)


def box_name(scope: str) -> str:
    return scope + SEP


def scope_of_box(name: str) -> str:
    return name[:-len(SEP)]


def assign(graph: Graph, prefix: tuple[str, ...], depth: int, opened=frozenset()) -> dict[str, str]:
    """Node name -> the scope whose box holds it, for every node that goes in a box.

    A node goes in its scope at ``depth`` levels below ``prefix``; an opened scope shows what it
    holds one level deeper (sub-scopes as boxes, its own nodes as themselves). A node sitting in a
    shallower scope than that stays itself. A variable handle or constant outside every scope
    whose consumers are all in one box joins that box (Keras passes each layer's variables in as
    unscoped function arguments).
    """
    opened = frozenset(opened)
    start = len(prefix)
    scope: dict[str, str] = {}
    for n in graph.nodes:
        path = scope_path(n.name)
        if path[:start] != prefix or depth < 1:
            continue
        k = start + depth
        while len(path) >= k and SEP.join(path[:k]) in opened:
            k += 1
        if len(path) >= k:
            scope[n.name] = SEP.join(path[:k])
    consumers = graph.consumers()
    for n in graph.nodes:
        if n.name in scope or scope_path(n.name) or not (n.dtype == "resource" or n.op in CONST_OPS):
            continue
        homes = {scope.get(dst) for dst, _ in consumers.get(n.name, ())}
        home = homes.pop() if len(homes) == 1 else None
        if home is not None:
            scope[n.name] = home
    return scope


@dataclass(frozen=True)
class Box:
    scope: str  # the full scope path
    members: tuple[str, ...]  # graph order
    ops: tuple[tuple[str, int], ...]  # op type -> count among members, most frequent first
    status: str = "unchanged"
    fused: tuple[str, ...] = ()  # the fused nodes it holds, as "op[fused ops]"

    @property
    def name(self) -> str:
        return box_name(self.scope)

    def short(self, prefix: tuple[str, ...] = ()) -> str:
        """The scope without the shared prefix: "conv2d_3" rather than "model/conv2d_3"."""
        parts = self.scope.split(SEP)
        return SEP.join(parts[len(prefix):]) if parts[:len(prefix)] == list(prefix) and len(parts) > len(prefix) \
            else self.scope


@dataclass(frozen=True)
class Collapsed:
    graph: Graph  # boxes and the nodes left outside them, edges between them
    boxes: dict[str, Box]  # box node name -> Box
    box_of: dict[str, str]  # original node name -> box node name (nodes in a box only)
    edge_counts: dict[tuple[str, str], int] = field(default_factory=dict)  # (src, dst) drawn -> original edges
    overlay: dict[str, str] = field(default_factory=dict)  # status of every drawn node
    shared_consts: dict[str, int] = field(default_factory=dict)  # drawn node -> constant inputs from another box

    def drawn(self, name: str) -> str:
        """What stands for an original node in the drawing: its box, or itself."""
        return self.box_of.get(name, name)


def box_status(members, overlay: dict[str, str]) -> str:
    statuses = {overlay.get(m, "unchanged") for m in members}
    return next((s for s in STATUS_ORDER if s in statuses), "unchanged")


def collapse(graph: Graph, scope: dict[str, str], overlay: dict[str, str] | None = None) -> Collapsed:
    """The graph with every box of ``scope`` (from ``assign``) drawn as one node.

    Edges inside a box vanish; edges between drawn nodes are merged (one per source, port and
    kind), and ``edge_counts`` keeps how many original edges each drawn pair stands for. A constant
    read across a box's border is counted in ``shared_consts`` rather than drawn: Grappler
    deduplicates constants, and one shared epsilon would otherwise tie every BatchNorm box to the
    first one (and make the layout take minutes). A box's status is the most telling of its
    members' (fused before absorbed before changed ...).
    """
    overlay = overlay or {}
    box_of = {name: box_name(s) for name, s in scope.items() if name in graph}
    members: dict[str, list[str]] = {}
    for n in graph.nodes:
        if n.name in box_of:
            members.setdefault(box_of[n.name], []).append(n.name)
    inputs: dict[str, list[Edge]] = {}
    seen: dict[str, set] = {}
    counts: Counter = Counter()
    shared: Counter = Counter()
    for n in graph.nodes:
        dst = box_of.get(n.name, n.name)
        for e in n.inputs:
            src = box_of.get(e.src, e.src)
            if src == dst:
                continue  # inside one box
            producer = graph.get(e.src)
            if producer is not None and producer.op in CONST_OPS and (src in members or dst in members):
                shared[dst] += 1
                continue
            counts[(src, dst)] += 1
            edge = Edge(src, 0 if src in members else e.port, e.control)
            if edge not in seen.setdefault(dst, set()):
                seen[dst].add(edge)
                inputs.setdefault(dst, []).append(edge)
    nodes: list[Node] = []
    boxes: dict[str, Box] = {}
    for n in graph.nodes:
        name = box_of.get(n.name)
        if name is None:
            nodes.append(Node(n.name, n.op, n.device, n.dtype, tuple(inputs.get(n.name, ())), n.fused_ops, n.attrs,
                              n.shape))
        elif name not in boxes:
            held = members[name]
            ops = Counter(graph[m].op for m in held)
            devices = {graph[m].device for m in held}
            fused = tuple(_fused_text(graph[m]) for m in held if overlay.get(m) == "fused")
            boxes[name] = Box(scope_of_box(name), tuple(held), tuple(ops.most_common()), box_status(held, overlay), fused)
            nodes.append(Node(name, SCOPE_OP, devices.pop() if len(devices) == 1 else "",
                              inputs=tuple(inputs.get(name, ()))))
    drawn_overlay = {n: s for n, s in overlay.items() if n not in box_of and n in graph}
    drawn_overlay.update({name: box.status for name, box in boxes.items()})
    return Collapsed(Graph(tuple(nodes), graph.stage), boxes, box_of, dict(counts), drawn_overlay, dict(shared))


def _fused_text(node: Node) -> str:
    return f"{node.op}[{', '.join(node.fused_ops)}]" if node.fused_ops else node.op


def collapse_pair(before: Graph, after: Graph, depth: int = 1, opened=frozenset(), overlays=({}, {})):
    """Both sides collapsed the same way (one prefix, one depth, the same opened scopes)."""
    prefix = common_prefix(before, after)
    return tuple(collapse(g, assign(g, prefix, depth, opened), o) for g, o in zip((before, after), overlays))


# ---- search --------------------------------------------------------------------------------

def matches(node: Node, query: str) -> bool:
    """Case-insensitive substring of the node's name, op or fused ops."""
    q = query.strip().lower()
    return bool(q) and (q in node.name.lower() or q in node.op.lower() or any(q in f.lower() for f in node.fused_ops))


def search(graph: Graph, query: str) -> list[str]:
    """Names of the nodes that match ``query``, in graph order ([] for an empty query)."""
    return [n.name for n in graph.nodes if matches(n, query)]


# ---- the regions a diff touched ------------------------------------------------------------

@dataclass(frozen=True)
class Region:
    graph: Graph  # core nodes, their neighbours and one marker per neighbour side with edges left out
    core: tuple[str, ...]  # the nodes the fusions and renames involve
    context: tuple[str, ...]  # their immediate inputs and consumers
    elided: dict[str, int]  # marker name -> how many edges it stands for


def region(graph: Graph, core, unmarked=frozenset()) -> Region:
    """Only ``core`` and its immediate neighbours; a neighbour's edges to anything else become one
    marker node (op ELIDED_OP) per direction, so that what is left out shows as left out.

    Neighbours whose op is in ``unmarked`` (what the drawing folds away) get no markers.
    """
    core_set = {name for name in core if name in graph}
    consumers = graph.consumers()
    context: set[str] = set()
    for name in core_set:
        context.update(e.src for e in graph[name].inputs if e.src in graph)
        context.update(dst for dst, _ in consumers.get(name, ()))
    context -= core_set
    shown = core_set | context
    nodes: list[Node] = []
    elided: dict[str, int] = {}
    for n in graph.nodes:
        if n.name not in shown:
            continue
        kept = tuple(e for e in n.inputs if e.src in shown)
        hidden_in = len(n.inputs) - len(kept)
        marked = n.name in context and n.op not in unmarked
        if marked and hidden_in:
            marker = f"{n.name} ⋯in"
            elided[marker] = hidden_in
            nodes.append(Node(marker, ELIDED_OP))
            kept += (Edge(marker),)
        nodes.append(Node(n.name, n.op, n.device, n.dtype, kept, n.fused_ops, n.attrs, n.shape))
        hidden_out = sum(1 for dst, _ in consumers.get(n.name, ()) if dst not in shown)
        if marked and hidden_out and n.op not in CONST_OPS:  # not a shared constant's other readers
            marker = f"{n.name} ⋯out"
            elided[marker] = hidden_out
            nodes.append(Node(marker, ELIDED_OP, inputs=(Edge(n.name),)))
    order = [n.name for n in graph.nodes]
    return Region(Graph(tuple(nodes), graph.stage), tuple(x for x in order if x in core_set),
                  tuple(x for x in order if x in context), elided)


def fusion_core(diff: dict, side: str) -> list[str]:
    """What the fusions and renames of a diff (GraphDiff.to_dict()) involve on one side."""
    names: list[str] = []
    for f in diff.get("fusions", ()):
        names += list(f["absorbed"]) if side == "before" else [f["node"]]
    names += [r["name"] for r in diff.get("renames", ())]
    return list(dict.fromkeys(names))
