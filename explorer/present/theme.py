"""The drawings in the page's dark theme: every colour a Graphviz SVG uses, with its lightness turned over.

Graphviz writes colours as attributes (``fill="#ddd3f7"``, ``stroke="#5b2c9f"``); CSS beats such
attributes, so the dark theme is a style sheet of one rule per colour found in the drawing, made here
from the SVG text itself. Whatever draws the graph (present.dot, scope_dot, hlo_dot) is covered without
a second palette to keep in step: a pale fill becomes a deep one of the same hue, a dark line or text a
light one. The page's own swatches (the legend) use ``dark`` for the same colours.
"""

from __future__ import annotations

import colorsys
import re

NAMED = {"white": "#ffffff", "black": "#000000", "gray": "#808080", "grey": "#808080"}
_COLOUR = re.compile(r'\b(fill|stroke)="(#[0-9a-fA-F]{6}|white|black|gr[ae]y)"')

# Dark-theme lightness stays within these: a white fill becomes a near-black of the page's own tone,
# black text becomes the page's light text colour rather than pure white.
DARK_FLOOR, DARK_CEILING = 0.11, 0.90


def dark(colour: str) -> str:
    """The colour for a dark page: the same hue and saturation, lightness turned over (0.9 -> 0.11)."""
    hex_colour = NAMED.get(colour.lower(), colour)
    r, g, b = (int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    h, light, s = colorsys.rgb_to_hls(r, g, b)
    light = DARK_FLOOR + (DARK_CEILING - DARK_FLOOR) * (1.0 - light)
    r, g, b = colorsys.hls_to_rgb(h, light, min(s, 0.75))
    return "#" + "".join(f"{round(c * 255):02x}" for c in (r, g, b))


def dark_css(*svgs: str, scope: str = ".fx-dark") -> str:
    """CSS rules under ``scope`` that give every fill and stroke colour in ``svgs`` its dark counterpart.

    The drawing's white background becomes transparent (the page's own background shows), and text
    with no colour of its own (Graphviz's black) the page's light text colour.
    """
    seen: dict[tuple[str, str], None] = {}
    for svg in svgs:
        for attr, colour in _COLOUR.findall(svg):
            seen[(attr, colour)] = None
    rules = [f'{scope} svg > g > polygon[fill="white"], {scope} svg > g > polygon[fill="#ffffff"] '
             "{ fill: transparent; }",
             f"{scope} svg text:not([fill]) {{ fill: {dark('#000000')}; }}"]
    for attr, colour in seen:
        rules.append(f'{scope} svg [{attr}="{colour}"] {{ {attr}: {dark(colour)}; }}')
    return "\n".join(rules)
