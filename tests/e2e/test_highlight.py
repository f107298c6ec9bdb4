"""Which ops went where, in a real browser: hovering or clicking a node lights up its counterparts on the other side."""

from __future__ import annotations

import re

from devkit.browser import LINKED, open_app
from playwright.sync_api import expect

from explorer.present.dot import html_id

LINKED_CLASS = re.compile(r"\bfx-linked\b")
LIT_CLASS = re.compile(r"\bfx-hl\b")
# The default model: MatMul + BiasAdd + GELU (approximate) -> one _FusedMatMul named after the GELU's last Mul.
FUSED = html_id("Gelu/mul_3", "a-")
ABSORBED = [html_id(name, "b-") for name in ("MatMul", "BiasAdd", "Gelu/Pow", "Gelu/Tanh", "Gelu/mul_3")]
# the inputs x, w, b, and the Identity after the chain (pruned, not fused)
NOT_ABSORBED = [html_id(name, "b-") for name in ("args_0", "args_1", "args_2", "Identity")]


def _node(frame, element_id: str):
    return frame.locator(f"[id='{element_id}']")


def test_fused_node_and_absorbed_nodes_light_each_other_up(app_server, page):
    open_app(page, app_server, 180_000)
    frame = page.frame_locator(LINKED).first
    fused = _node(frame, FUSED)
    fused.wait_for(state="visible", timeout=60_000)
    for element_id in ABSORBED:
        expect(_node(frame, element_id)).not_to_have_class(LIT_CLASS)

    # hover the fused node (after): every node it absorbed (before) lights up, nothing else does
    fused.hover()
    for element_id in ABSORBED:
        expect(_node(frame, element_id)).to_have_class(LINKED_CLASS)
    for element_id in NOT_ABSORBED:
        expect(_node(frame, element_id)).to_be_visible()
        expect(_node(frame, element_id)).not_to_have_class(LIT_CLASS)
    expect(fused).to_have_class(LIT_CLASS)
    expect(frame.locator("#fx-hint")).to_contain_text("→ _FusedMatMul [BiasAdd, GeluApproximate]")
    page.mouse.move(2, 2)  # leave: the highlight goes
    expect(_node(frame, ABSORBED[0])).not_to_have_class(LIT_CLASS)

    # and the other way: click an absorbed node (before) to pin; the fused node (after) stays lit
    _node(frame, html_id("Gelu/Tanh", "b-")).click()
    page.mouse.move(2, 2)
    expect(fused).to_have_class(LINKED_CLASS)
    expect(_node(frame, html_id("MatMul", "b-"))).to_have_class(LIT_CLASS)
    _node(frame, html_id("Gelu/Tanh", "b-")).click()  # release: lit only while hovered
    page.mouse.move(2, 2)
    expect(fused).not_to_have_class(LIT_CLASS)
