"""The hostile-input tally of issue 20: the security tests' corpus (tests/security/hostile_corpus.py, 111 generated
inputs) through the page's upload path and one warm engine, and through the command line, one process each.

    .venv/bin/python benchmarks/hostile_inputs.py [--cli all|subset|none] [--keep]

Each input is answered one of these ways: refused with a clear line (one line, no traceback, the words
the corpus expects), ran (the good models), refused unclearly (other words, several lines), accepted
(a hostile input that ran), crashed (a traceback, a dead worker, any other exit status), hung (a worker
stopped at its deadline, or a command still running after 300 s), stopped at the memory cap. Afterwards:
bytes left behind in the temp folders the engine, its workers, the page's session folder and the
command lines used; files written outside the explorer's folders (every file-creating system call of
the command lines, traced with strace when it is installed, plus the path the hostile models aim at);
peak memory (the largest worker process of the engine, and the largest process of a command line's
tree, each sampled every 20 ms). Prints date, time and the CPU's model name with the figures. The doors opened
after it (links, experiment and lesson files, layer stacks, the command line's file options and --url) have
their own tally by kind and door: benchmarks/hostile_doors.py (issue 30).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECURITY = ROOT / "tests" / "security"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(SECURITY))

import hostile_corpus as corpus  # noqa: E402
import psutil  # noqa: E402
from devkit.machine import cpu_model  # noqa: E402

CLI_TIMEOUT_S = 300.0
# File-creating system calls, and the path each creates (the last quoted path of the call).
TRACED = "openat,open,creat,mkdir,mkdirat,rename,renameat,renameat2,link,linkat,symlink,symlinkat,truncate"
CALL = re.compile(r'^\d+\s+(\w+)\((.*)\)\s+=\s+(-?\d+)')
ALLOWED = ("/dev/", "/proc/", "/sys/")


def verdict(case, got: str, message: str) -> str:
    if got == "ok":
        return "ran" if case.expect == "ok" else "accepted"
    if got in ("crash", "protocol", "traceback", "exit"):
        return "crashed"
    if got in ("timeout", "hung"):
        return "hung"
    if got == "memory":
        return "stopped at the memory cap"
    clear = case.expect == "refused" and case.words in message and "\n" not in message and "Traceback" not in message
    return "refused with a clear line" if clear else "refused unclearly"


def through_engine(cases, root: Path) -> tuple[Counter, list, int]:
    """Every case through the upload function the page calls (files) or the command line's path function
    (directories), then one warm engine (the server's limits); the peak RSS of its workers."""
    from explorer.engine import Engine, uploads
    from explorer.errors import SpecError, WorkerError
    from explorer.model.flags import Config

    os.environ["EXPLORER_UPLOAD_DIR"] = str(root / "uploads")
    engine, tally, odd, peak, done = Engine(cache_dir=None), Counter(), [], [0], threading.Event()

    def watch() -> None:
        while not done.is_set():
            for worker in engine.pool.workers():
                try:
                    peak[0] = max(peak[0], psutil.Process(worker.pid).memory_info().rss)
                except psutil.Error:
                    pass
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    folder = uploads.SessionFolder()
    try:
        for case in cases:
            try:
                spec = (uploads.save_upload(folder.path, case.name, case.path.read_bytes(), allow_programs=True)
                        if case.page else uploads.spec_for_path(str(case.path)))
                engine.inspect(spec, Config.make("cpu", {}), use_cache=False)
                got, message = "ok", ""
            except SpecError as exc:
                got, message = "refused", str(exc)
            except WorkerError as exc:
                got, message = exc.kind, str(exc)
            except Exception as exc:  # noqa: BLE001 - a traceback is what the tally counts
                got, message = "traceback", f"{type(exc).__name__}: {exc}"
            outcome = verdict(case, got, message)
            tally[outcome] += 1
            if outcome not in ("ran", "refused with a clear line"):
                odd.append((case.name, outcome, message[:200]))
    finally:
        done.set()
        watcher.join()
        engine.close()
        folder.remove()
    return tally, odd, peak[0]


def through_cli(cases, root: Path, use_strace: bool) -> tuple[Counter, list, list, int]:
    """Every case through ``python -m explorer inspect --model PATH --no-cache``, a process each."""
    temp = root / "cli-tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONDONTWRITEBYTECODE": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    tally, odd, outside, peak = Counter(), [], [], 0
    for case in cases:
        command = [sys.executable, "-m", "explorer", "inspect", "--model", str(case.path), "--no-cache"]
        trace = root / "trace.txt"
        if use_strace:
            command = ["strace", "-f", "-qq", "--seccomp-bpf", "-e", f"trace={TRACED}", "-o", str(trace)] + command
        status, stderr, rss = run_sampled(command, env)
        peak = max(peak, rss)
        lines = stderr.strip().splitlines()
        if status is None:
            got, message = "hung", f"still running after {CLI_TIMEOUT_S:.0f} s"
        elif status == 0:
            got, message = "ok", ""
        elif "Traceback" in stderr:
            got, message = "traceback", stderr[-300:]
        elif status == 2:
            got, message = "refused", "\n".join(lines)
        elif status == 1:
            message = "\n".join(lines)
            got = ("timeout" if "in time" in message else "memory" if "cap" in message
                   else "crash" if "died" in message else "refused")
        else:
            got, message = "exit", f"exit status {status}: {stderr[-300:]}"
        outcome = verdict(case, got, message.removeprefix("explorer: error: "))
        tally[outcome] += 1
        if outcome not in ("ran", "refused with a clear line"):
            odd.append((case.name, outcome, message[:200]))
        if use_strace and trace.exists():
            outside += [(case.name, path) for path in written(trace.read_text(errors="replace"), root)]
            trace.unlink()
    return tally, odd, outside, peak


def run_sampled(command: list[str], env: dict) -> tuple[int | None, str, int]:
    """Run ``command`` (None for its status when it outlives CLI_TIMEOUT_S, then killed) and the peak RSS of
    its process tree, sampled every 20 ms."""
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err, text=True, env=env,
                                start_new_session=True)
        deadline, peak = time.monotonic() + CLI_TIMEOUT_S, 0
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                tree = [psutil.Process(proc.pid)] + psutil.Process(proc.pid).children(recursive=True)
                peak = max([peak] + [p.memory_info().rss for p in tree if p.is_running()])
            except psutil.Error:
                pass
            time.sleep(0.02)
        status = proc.poll()
        if status is None:
            os.killpg(proc.pid, 9)
            proc.wait()
        err.seek(0)
        return status, err.read(), peak


def written(trace: str, root: Path) -> list[str]:
    """Paths a traced command created or wrote outside ``root`` (its temp folder) and the system's pseudo-files."""
    out = []
    for line in trace.splitlines():
        match = CALL.match(line)
        if not match or match.group(3).startswith("-"):
            continue
        call, arguments = match.group(1), match.group(2)
        paths = re.findall(r'"((?:[^"\\]|\\.)*)"', arguments)
        if not paths or (call in ("open", "openat") and not re.search(r"O_WRONLY|O_RDWR|O_CREAT", arguments)):
            continue
        path = os.path.normpath(os.path.join(str(ROOT), paths[-1]))
        if not (path.startswith(str(root) + os.sep) or path.startswith(ALLOWED)):
            out.append(path)
    return out


def left_behind(root: Path) -> tuple[int, int]:
    """Files and bytes under the temp folders the runs used (their inputs excluded)."""
    files = [p for name in ("tmp", "cli-tmp", "uploads") for p in (root / name).rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cli", choices=("all", "subset", "none"), default="all",
                        help="inputs run through the command line (subset: the security test's own)")
    parser.add_argument("--keep", action="store_true", help="keep the inputs and the temp folders (printed)")
    args = parser.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M")
    root = Path(tempfile.mkdtemp(prefix="explorer-hostile-"))
    (root / "tmp").mkdir()
    inputs = root / "inputs"
    bases = inputs / "bases"
    bases.mkdir(parents=True)
    subprocess.run([sys.executable, str(SECURITY / "make_bases.py"), str(bases)], check=True, capture_output=True,
                   env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TMPDIR": str(inputs)})
    cases = corpus.build(inputs / "corpus", bases)
    os.environ["TMPDIR"], tempfile.tempdir = str(root / "tmp"), str(root / "tmp")  # the engine's and its workers'
    use_strace = shutil.which("strace") is not None
    try:
        t0 = time.perf_counter()
        engine_tally, engine_odd, engine_peak = through_engine(cases, root)
        t1 = time.perf_counter()
        chosen = cases if args.cli == "all" else [] if args.cli == "none" else [
            c for c in cases if c.name in corpus.CLI_SUBSET]
        cli_tally, cli_odd, outside, cli_peak = through_cli(chosen, root, use_strace)
        t2 = time.perf_counter()
        files, nbytes = left_behind(root)
        aimed = os.path.exists(corpus.VICTIM)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"hostile inputs, {started}, {cpu_model()} ({os.cpu_count()} cores), {len(cases)} inputs "
          f"({sum(c.expect == 'refused' for c in cases)} hostile, {sum(c.expect == 'ok' for c in cases)} good; "
          f"{sum(not c.page for c in cases)} directories, command line only)")
    for label, tally, odd, seconds in (("page upload path + warm engine", engine_tally, engine_odd, t1 - t0),
                                       (f"command line ({args.cli})", cli_tally, cli_odd, t2 - t1)):
        tried = sum(tally.values())
        print(f"  {label}: {tried} tried in {seconds:.0f} s: " + ", ".join(
            f"{tally.get(k, 0)} {k}" for k in ("refused with a clear line", "ran", "refused unclearly", "accepted",
                                               "crashed", "hung", "stopped at the memory cap")))
        for name, outcome, message in odd:
            print(f"    {name}: {outcome}: {message}")
    print(f"  left behind in the temp folders: {files} files, {nbytes} bytes")
    tracing = ("no command line run: only the aimed-at path checked" if not chosen else "traced with strace"
               if use_strace else "strace not installed: only the aimed-at path checked")
    print(f"  files written outside the explorer's folders: {len(outside) + aimed} ({tracing})")
    for name, path in outside[:20]:
        print(f"    {name}: {path}")
    print(f"  peak memory: {engine_peak / 2**20:.0f} MiB (largest worker of the warm engine), "
          f"{cli_peak / 2**20:.0f} MiB (largest process of a command line)")
    if args.keep:
        print(f"  kept in {root}")


if __name__ == "__main__":
    main()
