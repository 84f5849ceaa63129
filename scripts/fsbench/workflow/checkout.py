"""Which fsbench a run's steps import: the checkout's whose Snakefile runs."""

import os


def scripts_first(scripts: str) -> None:
    """Put `scripts` (the checkout's scripts/) first on the PYTHONPATH the step scripts inherit. Snakemake gives their
    processes the folder only after site-packages, where make setup's editable install names the fsbench of the
    checkout that made .venv: a run from another checkout (or worktree) sharing that .venv would run its code."""
    now = os.environ.get("PYTHONPATH", "")
    if now.split(os.pathsep)[0] != scripts:
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [scripts, now]))
