"""A real file upload in the browser: a small frozen GraphDef made here, its graphs and its fusion report.

The .pb is made by TensorFlow in a process of its own (Conv2D+BiasAdd+Relu, then MatMul+BiasAdd+Relu,
non-zero weights); the same process then counts the fused ops of its optimized graph with no explorer
code (tests/imported/make_models.py's oracle), under the app server's oneDNN setting. The page must draw
those fused nodes and list them in the report's CSV download.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from devkit.browser import LINKED, download, expect_rerun, open_app, wait_idle
from playwright.sync_api import expect

from explorer.present.dot import html_id

ORACLE = Path(__file__).resolve().parents[1] / "imported" / "make_models.py"
MAKE = """
import sys, numpy as np, tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
rng = np.random.default_rng(3)
w1 = tf.constant(rng.standard_normal((3, 3, 3, 4)), tf.float32); b1 = tf.constant(rng.uniform(.1, .5, 4), tf.float32)
w2 = tf.constant(rng.standard_normal((4, 5)), tf.float32); b2 = tf.constant(rng.uniform(.1, .5, 5), tf.float32)
def model(x):
    y = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w1, 1, "SAME"), b1))
    return tf.nn.relu(tf.nn.bias_add(tf.matmul(tf.reduce_mean(y, [1, 2]), w2), b2))
fn = tf.function(model).get_concrete_function(tf.TensorSpec([1, 8, 8, 3], tf.float32, name="image"))
open(sys.argv[1], "wb").write(convert_variables_to_constants_v2(fn).graph.as_graph_def().SerializeToString())
"""


def _tf(*args) -> str:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "1"}  # the app server's default
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_a_graphdef_upload_shows_its_graphs_and_fusion_report(app_server, page, tmp_path):
    path = tmp_path / "tiny.pb"
    _tf("-c", MAKE, str(path))
    direct = {op: n for op, n in json.loads(_tf(str(ORACLE), "count", "graphdef", str(path))).items()
              if op.startswith("_Fused")}
    assert direct  # non-zero weights: TensorFlow fuses something

    open_app(page, app_server, 180_000)
    with expect_rerun(page):
        page.get_by_text("an imported model", exact=True).click()
    with expect_rerun(page, 180_000):
        page.locator("[data-testid='stSidebar'] [data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))
    wait_idle(page, 180_000)
    assert page.locator("[data-testid='stException']").count() == 0
    total = sum(direct.values())
    expect(page.get_by_text(f"{total} fusion{'s' if total != 1 else ''}", exact=True).first).to_be_visible()

    with expect_rerun(page, 180_000):  # only the open tab's panel runs: opening one reruns the page
        page.get_by_role("tab", name="Fusion report").click()
    expect(page.get_by_text(f"Fusions: {total} in {len(direct)} pattern", exact=False).first).to_be_visible()
    fusions_csv = download(page, page.get_by_role("button", name="Fusions (CSV)"))
    rows = list(csv.DictReader(io.StringIO(Path(fusions_csv.path()).read_text())))
    shown = {row["fused op"].replace(" [", "[").replace(", ", ","): int(row["count"]) for row in rows}
    assert shown == direct

    # Each fused node of the report is drawn, after Grappler, in the linked before/after view.
    with expect_rerun(page, 180_000):
        page.get_by_role("tab", name="Graphs before → after").click()
    frame = page.frame_locator(LINKED).first
    for row in rows:
        for node in row["nodes"].split("; "):
            expect(frame.locator(f"[id='{html_id(node, 'a-')}']")).to_be_attached(timeout=60_000)
