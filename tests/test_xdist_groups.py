"""The suite's xdist groups really group: every test of the "slurm" group runs on one worker (tests/conftest.py's
fix for pytest-xdist 3.8 under pytest 9, which otherwise spreads them over both)."""

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

GROUPED = """
import os
import pytest

@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    out = os.path.join(os.environ["WORKERS_DIR"], str(i))
    with open(out, "w") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"])
"""


def test_the_slurm_group_runs_on_one_worker(tmp_path):
    (tmp_path / "conftest.py").write_text(
        f"import importlib.util\nimport sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        f"spec = importlib.util.spec_from_file_location('suite_conftest', {str(TESTS / 'conftest.py')!r})\n"
        "suite = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(suite)\n"
        "pytest_collection_modifyitems = suite.pytest_collection_modifyitems\n"
    )
    (tmp_path / "test_slurm_grouped.py").write_text(GROUPED)
    (tmp_path / "test_other.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    out = tmp_path / "workers"
    out.mkdir()
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup"]
    env = os.environ | {"WORKERS_DIR": str(out)}
    done = subprocess.run([*argv, str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    workers = {f.name: f.read_text() for f in out.iterdir()}
    assert len(workers) == 6
    assert len(set(workers.values())) == 1, f"the slurm group ran on several workers: {workers}"
