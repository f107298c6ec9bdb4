"""Issue 30, the real-browser pass for links: hostile links in headless Chromium on the real app. A link that
Streamlit drops (past its 1,000 parameters) is said on the page; a link with values that broke the page before
(5,000 levels of JSON, '²' as a number, a list as a dtype) opens with what it ignored named in one bounded line;
a Markdown image in a link is shown as text, and the browser never asks for it."""

from __future__ import annotations

import json
import time
from urllib.parse import quote

from devkit.browser import open_app
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

SMALL = "preset=matmul_bias_relu&m=64&k=32&n=16"
EXCEPTION = "[data-testid='stException']"
PIXEL = "http://127.0.0.1:9/pixel-from-a-link.png"


def test_hostile_links_open_with_one_bounded_line_and_load_nothing(app_server, page):
    asked = []
    page.on("request", lambda request: asked.append(request.url))
    deep = "{" + '"a":{' * 5000 + "}" * 5000 + "}"
    dtype = json.dumps({"input": {"shape": [1, 4], "dtype": [1]}, "layers": [{"type": "Dense", "units": 2}]})
    for hostile in (f"stack={quote(deep)}", f"stack={quote(dtype)}", f"{SMALL}&reps=%C2%B2&tab={quote(f'![x]({PIXEL})')}",
                    f"{SMALL}&on=remapping&off=remapping&" + "&".join(f"colour{i}={'x' * 300}" for i in range(200))):
        open_app(page, f"{app_server}/?{hostile}", 180_000)
        # under load a rerun can redraw the note while it is read: wait on the alert itself, generously
        note = page.locator("[data-testid='stAlert']").filter(has_text="Ignored from the link:").first
        expect(note).to_be_visible(timeout=120_000)
        lines = [line for line in note.inner_text(timeout=120_000).splitlines() if line.strip() not in ("", "link_off")]
        assert len(lines) == 1 and len(lines[0]) <= 2000, lines  # one line (the alert's icon aside)
        text = lines[0]
        assert page.locator(EXCEPTION).count() == 0
    assert "both on and off" in text and "more." in text, text
    assert not [url for url in asked if url.startswith(PIXEL)], [u for u in asked if "pixel" in u]


def test_a_link_streamlit_drops_is_said(app_server, page):
    """Streamlit drops the whole query before the page's script runs; the browser's check says so."""
    many = "&".join(f"k{i}=1" for i in range(1200))
    open_app(page, f"{app_server}/?{SMALL}&{many}", 180_000)
    deadline = time.monotonic() + 120
    said = ""
    while not said and time.monotonic() < deadline:
        for frame in page.frames:
            try:
                note = frame.locator("#explorer-dropped-link")
                text = note.inner_text(timeout=1000) if note.count() else ""
            except PlaywrightError:
                continue
            said = text if "did not read this link" in text else said
        time.sleep(1)
    assert "The page did not read this link (1,204 parameters; Streamlit reads at most 1,000)" in said, said
    assert page.locator(EXCEPTION).count() == 0
