"""The command line runs an experiment file and prints the page link of its run (real workers)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from explorer.model.experiment import Bench, Experiment
from explorer.model.flags import Config

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"preset": "matmul_bias_relu", "params": {"m": 64, "k": 32, "n": 16}}


def run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "explorer", *args], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=300, env=env)


def _opened(link: str, base: Experiment | None = None) -> Experiment:
    exp, ignored = Experiment.from_query(parse_qs(urlsplit(link).query), base)
    assert ignored == []
    return exp


def test_inspect_and_bench_run_an_experiment_and_print_its_link(tmp_path):
    exp = Experiment(model=SMALL, config=Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "1"}, {"remapping": "off"}),
                     tab="passes", bench=Bench(reps=5, warmup=1, seconds=20))
    path = tmp_path / "exp.json"
    path.write_text(exp.to_json())

    out = run("inspect", "--experiment", str(path), "--link", "--json", "--url", "http://lab.example:9000")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["fusions"] == []  # the file's switch: the remapper off, so nothing fused
    assert result["link"].startswith("http://lab.example:9000/?preset=matmul_bias_relu&m=64&k=32&n=16&")
    assert _opened(result["link"]) == exp  # the page opens this very experiment

    # bench: the file's settings, a flag given beside it on top, and the link in words at the end; written for a
    # server whose sessions start with cuBLASLt on (EXPLORER_DEFAULT_ENV), which this run leaves unset
    out = run("bench", "--experiment", str(path), "--grappler", "remapping=on", "--link",
              env={**__import__("os").environ, "EXPLORER_URL": "http://class.example",
                   "EXPLORER_DEFAULT_ENV": "TF_USE_CUBLASLT=1"})
    assert out.returncode == 0, out.stderr
    assert "5 interleaved reps" in out.stdout.splitlines()[0]
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("Page link: http://class.example/?preset=matmul_bias_relu")
    assert "TF_USE_CUBLASLT=unset" in last
    server = Experiment(config=Config.make("cpu", {"TF_USE_CUBLASLT": "1"}))
    assert _opened(last.removeprefix("Page link: "), server) == exp.replace(
        config=exp.config.with_switch("remapping", "on"))


def test_a_page_saved_experiment_with_xla_and_repeatable_timing_runs_as_the_page_ran_it(tmp_path):
    # The page saves XLA shown beside Grappler and its benchmark form's repeatable timing; its benchmark form times
    # Grappler's fused against unfused in that many processes. Refused before ("the three-way benchmark with XLA
    # runs in one process"), even with --processes 1 given (taken for "left at the default").
    exp = Experiment(model=SMALL, compiler="both", bench=Bench(reps=5, warmup=1, seconds=10, processes=2))
    path = tmp_path / "exp.json"
    path.write_text(exp.to_json())
    out = run("bench", "--experiment", str(path), "--json", "--link")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["processes"] == 2 and len(result["per_process"]) == 2
    assert _opened(result["link"]).compiler == "both"  # the link opens XLA beside Grappler, as the file did

    out = run("bench", "--experiment", str(path), "--processes", "1", "--json")  # given: it wins over the file's
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["processes"] == 1

    out = run("bench", "--experiment", str(path), "--compiler", "both", "--json")  # the three-way: one process
    assert out.returncode == 0, out.stderr
    assert set(json.loads(out.stdout)["summary"]["variants"]) >= {"xla"}
