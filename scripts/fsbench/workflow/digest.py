"""The analysis digest: a param of the rules that turn records into tables and plots (rules/analysis.smk), made of
every file of fsbench that their scripts import. Unlike a measurement these cost seconds, so a new fsbench's
analysis redoes them; the profiles leave Snakemake's own "code" trigger out (docs/guide.md, "What is decided by
what"), which would rerun a measurement for a changed line."""

import hashlib
from pathlib import Path

from fsbench.toolkit.imports import closure


def analysis_files(scripts: list[Path]) -> list[Path]:
    """The step scripts and every fsbench file they import, directly or not (scripts/fsbench beside them)."""
    return closure(Path(scripts[0]).parent, scripts)


def analysis_digest(scripts: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in analysis_files(scripts):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]
