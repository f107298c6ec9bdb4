#!/usr/bin/env bash
# TF Fusion Explorer: the one entry point for developers and CI.
#
#   ./dev.sh app [streamlit options]   set up if needed, then serve the app (http://localhost:8501)
#   ./dev.sh test [pytest options]     set up if needed (with Debian's chromium), then run pytest in
#                                      EXPLORER_TEST_PROCESSES processes (default 2; `-n 0` for one)
#   ./dev.sh setup [--test]            only the set-up step
#
# The set-up step is idempotent and fast when already done:
#   1. Debian packages graphviz, fonts-dejavu-core (and chromium for tests), installed with apt-get
#      only when missing (`apt-get update` first, only then);
#   2. a virtual environment (.venv) made with `python3 -m venv` when missing;
#   3. `uv pip install -r requirements-dev.txt` (which includes requirements.txt; uv itself from PyPI with
#      pip, and pip alone if uv fails), skipped while
#      .venv/.requirements.sha matches the sha256 of the requirements files.
# Browser tests drive /usr/bin/chromium; `playwright install` is never run (it downloads a browser).
#
# Environment:
#   EXPLORER_ADDRESS, EXPLORER_PORT  where `app` listens (default 127.0.0.1, this machine only, where every
#                                    upload format is taken; 0.0.0.0 for others to reach it; 8501)
#   EXPLORER_VENV                    the virtual environment to use (default: .venv beside this file)
#   EXPLORER_PYTHON                  the interpreter that makes the venv (default: python3)
#   EXPLORER_SKIP_APT=1              never call apt-get (only report missing Debian packages)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"

VENV="${EXPLORER_VENV:-$ROOT/.venv}"
PYTHON="${EXPLORER_PYTHON:-python3}"
REQUIREMENTS=(requirements.txt requirements-dev.txt)
STAMP="$VENV/.requirements.sha"
UV_VERSION=0.13.9  # the installer of the pinned packages (install_requirements)
APP_DEBS=(graphviz fonts-dejavu-core)
TEST_DEBS=(chromium)

log() { printf 'dev.sh: %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

# Print the Debian packages among "$@" that are not installed.
missing_debs() {
    local pkg
    for pkg in "$@"; do
        if ! dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
            echo "$pkg"
        fi
    done
}

# Install the Debian packages among "$@" that are missing.
ensure_debs() {
    local missing sudo=()
    if ! command -v dpkg-query >/dev/null 2>&1; then
        log "warning: not a Debian/Ubuntu system (no dpkg-query); make sure these are installed:" \
            "$* (Debian package names; the browser tests expect /usr/bin/chromium)"
        return 0
    fi
    mapfile -t missing < <(missing_debs "$@")
    [ "${#missing[@]}" -eq 0 ] && return 0
    if [ "${EXPLORER_SKIP_APT:-0}" = 1 ]; then
        log "warning: EXPLORER_SKIP_APT=1, not installing missing Debian packages: ${missing[*]}"
        return 0
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        log "warning: apt-get not found; install these Debian packages by hand: ${missing[*]}"
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 ||
            die "not root and no sudo: run as root: apt-get update && apt-get install -y ${missing[*]}"
        sudo=(sudo)
    fi
    log "installing Debian packages: ${missing[*]}"
    "${sudo[@]}" apt-get -q update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=300 \
        install "${missing[@]}"
}

requirements_sha() {
    cat "${REQUIREMENTS[@]}" | sha256sum | cut -d' ' -f1
}

# The pinned packages into the venv with uv (~50 s for TensorFlow and the rest on a fresh machine, where pip
# takes ~2 min; bytecode compiled as pip does, or every first import pays for it), with pip if uv fails.
install_requirements() {
    local pip=(env PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/python" -m pip)
    if "${pip[@]}" install --progress-bar off -q "uv==$UV_VERSION" &&
        "$VENV/bin/python" -m uv pip install --python "$VENV/bin/python" --system-certs --compile-bytecode \
            -r requirements-dev.txt; then
        return 0
    fi
    log "warning: uv could not install the packages; installing them with pip"
    "${pip[@]}" install --progress-bar off -r requirements-dev.txt
}

# Make the virtual environment if missing and install the pinned packages if they changed.
ensure_venv() {
    if [ ! -x "$VENV/bin/python" ]; then
        if [ -e "$VENV" ] && [ -n "$(ls -A "$VENV" 2>/dev/null)" ]; then
            die "$VENV exists but has no bin/python; move it away and run again"
        fi
        command -v "$PYTHON" >/dev/null 2>&1 ||
            die "$PYTHON not found: install Python 3.11 (Debian: apt-get install python3 python3-venv)"
        local version
        version="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
        [ "$version" = 3.11 ] || log "warning: $PYTHON is Python $version; the project is tested with 3.11"
        log "creating virtual environment $VENV with $PYTHON ($version)"
        "$PYTHON" -m venv "$VENV" ||
            die "python -m venv failed; on Debian/Ubuntu install python3-venv (apt-get install python3-venv)"
    fi
    local want have=""
    want="$(requirements_sha)"
    [ -f "$STAMP" ] && have="$(cat "$STAMP")"
    if [ "$want" != "$have" ]; then
        log "installing Python packages from ${REQUIREMENTS[*]} into $VENV"
        install_requirements
        echo "$want" >"$STAMP"
    fi
}

# setup [--test]: everything `app` needs, and with --test what `test` needs too.
setup() {
    local debs=("${APP_DEBS[@]}")
    [ "${1:-}" = --test ] && debs+=("${TEST_DEBS[@]}")
    # One set-up of a venv at a time (two terminals, or a test run beside the app); apt-get has
    # its own lock, which it waits for.
    if command -v flock >/dev/null 2>&1; then
        mkdir -p "$ROOT/.cache"
        exec 9>"$ROOT/.cache/setup-$(printf '%s' "$VENV" | sha256sum | cut -c1-12).lock"
        flock 9
    fi
    ensure_debs "${debs[@]}"
    ensure_venv
    if command -v flock >/dev/null 2>&1; then
        exec 9>&-
    fi
}

main() {
    cmd="${1:-help}"
    [ "$#" -gt 0 ] && shift
    case "$cmd" in
        app)
            setup
            port="${EXPLORER_PORT:-8501}"
            # This machine only unless asked: such a server takes SavedModel and .keras uploads (engine/uploads.py)
            address=(--server.address "${EXPLORER_ADDRESS:-127.0.0.1}")
            # explorer.ui.serve: `streamlit run app.py` with the default configuration's worker started first.
            exec "$VENV/bin/python" -m explorer.ui.serve --server.headless true \
                --browser.gatherUsageStats false --server.port "$port" "${address[@]}" "$@"
            ;;
        test)
            setup --test
            # pytest-xdist; tests/conftest.py schedules the tests by file and by its groups (see there)
            exec "$VENV/bin/python" -m pytest -n "${EXPLORER_TEST_PROCESSES:-2}" --dist loadfile "$@"
            ;;
        setup)
            setup "$@"
            log "set-up done: $VENV"
            ;;
        help | -h | --help)
            usage
            ;;
        *)
            usage >&2
            die "unknown command: $cmd"
            ;;
    esac
}

# Everything above is parsed before anything runs, so a `git pull` that rewrites this file while
# it runs (a long first pip install) cannot make bash read a half-old script.
main "$@"; exit
