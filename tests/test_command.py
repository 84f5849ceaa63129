"""The `fsbench` command make setup installs into .venv (pyproject.toml's console script, the package editable):
it runs this checkout's code from any folder, without PYTHONPATH; `python -m fsbench` keeps working."""

import os
import subprocess

from conftest import REPO

VENV = REPO / ".venv" / "bin"
BARE = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def run(argv, cwd, env=BARE):
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_the_command_runs_this_checkouts_code_from_anywhere(tmp_path):
    found = run([VENV / "python", "-c", "import fsbench; print(fsbench.__file__)"], tmp_path)
    assert found.stdout.strip() == str(REPO / "scripts" / "fsbench" / "__init__.py"), found.stderr
    helped = run([VENV / "fsbench", "--help"], tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert all(c in helped.stdout for c in ("release", "results", "compare", "history")), helped.stdout
    campaign = tmp_path / "c.yaml"
    campaign.write_text(f"campaign: here\nscratch: {tmp_path}\narrays: {{a: {{kind: path, path: {tmp_path}}}}}\n")
    said = run([VENV / "fsbench", "results", str(campaign)], tmp_path)
    assert (said.returncode, said.stdout) == (0, "results/here\n"), said.stderr
    bad = run([VENV / "fsbench", "results", str(tmp_path / "missing.yaml")], tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("fsbench: ")


def test_python_m_fsbench_keeps_working(tmp_path):
    said = run([VENV / "python", "-m", "fsbench", "--help"], REPO / "scripts", BARE | {"PYTHONPATH": "."})
    assert said.returncode == 0 and "history" in said.stdout, said.stderr


def test_a_run_from_another_checkout_imports_that_checkouts_fsbench(tmp_path, monkeypatch):
    """A checkout sharing this .venv (a worktree, a copy): its step scripts, which Snakemake starts with their folder
    after site-packages (and so after the editable install's), import its fsbench, not this one's."""
    from fsbench.workflow.checkout import scripts_first

    scripts = tmp_path / "other" / "scripts"
    (scripts / "fsbench").mkdir(parents=True)
    (scripts / "fsbench" / "__init__.py").write_text("")
    step = ["-c", f"import sys; sys.path.append({str(scripts)!r}); import fsbench; print(fsbench.__file__)"]
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert run([VENV / "python", *step], tmp_path, dict(os.environ)).stdout.startswith(str(REPO))  # as Snakemake does
    scripts_first(str(scripts))
    scripts_first(str(scripts))  # once only
    assert os.environ["PYTHONPATH"] == str(scripts)
    assert run([VENV / "python", *step], tmp_path, dict(os.environ)).stdout.strip() == str(
        scripts / "fsbench/__init__.py"
    )
