#!/usr/bin/env bash
# Set up what fsbench needs on a Debian/Ubuntu machine: the system tools (as root, with apt-get)
# and .venv/ with the pinned Python packages. Idempotent: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

tools=(mkfs.ext4:e2fsprogs mkfs.xfs:xfsprogs mkfs.btrfs:btrfs-progs fio:fio losetup:util-linux
       fincore:util-linux blkid:util-linux mdadm:mdadm)
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

py=${PYTHON:-python3}
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "setup: fsbench needs Python 3.11 or newer as '$py' (set PYTHON=/path/to/python3.11)" >&2
  exit 1
fi
stamp=.venv/.requirements.sha
want=$(sha256sum requirements.txt | cut -d' ' -f1)
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
  echo "$want" > "$stamp"
fi
