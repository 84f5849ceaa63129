#!/usr/bin/env bash
# Set up what fsbench needs on a Debian/Ubuntu machine: the system tools (as root, with apt-get)
# and .venv/ with the pinned Python packages. Idempotent: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

tools=(mkfs.ext4:e2fsprogs mkfs.xfs:xfsprogs mkfs.btrfs:btrfs-progs fio:fio losetup:util-linux
       fincore:util-linux blkid:util-linux mdadm:mdadm cc:gcc)
missing=()
for entry in "${tools[@]}"; do
  command -v "${entry%%:*}" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v "${entry%%:*}" >/dev/null 2>&1 \
    || missing+=("${entry#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  pkgs=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing system tools: $pkgs"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs >/dev/null
  else
    echo "setup: missing system tools: $pkgs— install them as root (apt-get install $pkgs) and run make again" >&2
    exit 1
  fi
fi

# What only some tests need, installed where missing like the tools above; if it cannot be, setup goes on and
# those tests skip. optional PACKAGE WHAT TESTS FOUND-COMMAND...
optional() {
  local pkg=$1 what=$2 tests=$3
  shift 3
  "$@" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing $what: $pkg"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg"; } >/dev/null \
      || echo "setup: could not install $pkg — $tests will skip" >&2
  else
    echo "setup: no $pkg — $tests will skip (apt-get install $pkg, as root)" >&2
  fi
}
# The headless browser tests/test_campaign.py opens report.html in.
optional chromium "the report test's headless browser" "the report's browser test" \
  sh -c 'command -v chromium || command -v chromium-browser || command -v google-chrome'
# PostgreSQL, for the history tests that start a throwaway server of their own (initdb + pg_ctl); Debian keeps
# them in /usr/lib/postgresql/<version>/bin.
optional postgresql "PostgreSQL for the history store tests" "the PostgreSQL store tests" \
  sh -c 'command -v initdb || ls /usr/lib/postgresql/*/bin/initdb'
# libfuse3, for the tests' throttle where the cgroup v1 blkio hierarchy is absent (tests/slowdev.py).
optional fuse3 "FUSE for the tests' throttle" "the throttled tests (where cgroup v1 blkio is absent)" \
  sh -c 'ldconfig -p | grep -q libfuse3.so.3'

py=${PYTHON:-python3}
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "setup: fsbench needs Python 3.11 or newer as '$py' (set PYTHON=/path/to/python3.11)" >&2
  exit 1
fi
stamp=.venv/.requirements.sha
want=$(cat requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  if ! "$py" -m venv .venv >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
      "$py" -m venv .venv
    else
      echo "setup: '$py -m venv' failed — install python3-venv and run make again" >&2
      exit 1
    fi
  fi
  echo "setup: installing pinned Python packages into .venv/"
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
  # fsbench itself, editable: .venv/bin/fsbench, and `import fsbench` without PYTHONPATH (pyproject.toml)
  .venv/bin/pip install -q --disable-pip-version-check --no-deps -e .
  echo "$want" > "$stamp"
fi

# The python engine's I/O loop (scripts/fsbench/engines/loops.c), built once here rather than by the first measurement.
.venv/bin/python -c 'from fsbench.engines import loops; loops.build(loops.BUILD)'
