"""Campaigns people keep: each change re-measures only what it touches (checked by the records' started_at)."""

import copy
import json
import re
import shutil
from collections import Counter

import pytest

from fsbench.workflow.digest import analysis_files

from conftest import REPO, needs_root, run_campaign

pytestmark = [needs_root, pytest.mark.e2e]


def base(scratch):
    return {
        "campaign": "keep",
        "scratch": str(scratch),
        "arrays": {"demo": {"kind": "loop", "size": "384MiB"}},
        "filesystems": {"ext4": {"type": "ext4"}, "xfs": {"type": "xfs"}},
        "io": {"size": "32MiB", "block_sizes": ["1MiB"], "repeats": 1},
    }


def started(work) -> dict:
    """Every measurement's started_at, by its path under runs/local/ (the campaign names no hosts)."""
    runs = work / "results/keep/runs/local"
    found = [*runs.rglob("write.json"), *runs.rglob("read.json")]
    return {str(p.relative_to(runs)): json.loads(p.read_text())["row"]["started_at"] for p in found}


def planned(dry) -> dict:
    """Jobs by rule, from Snakemake's job stats table of a dry run."""
    return dict(re.findall(r"^(\w+)\s+(\d+)$", dry.stdout, re.M))


# A dry run's plan after a change of the code that makes the tables and plots: those again, nothing measured.
TABLES_AGAIN = {"aggregate": "1", "plots": "1", "history": "1", "all": "1", "total": "4"}


def changed(before: dict, after: dict) -> set:
    """Records that are new or were measured again."""
    return {k for k, v in after.items() if before.get(k) != v}


def test_each_change_costs_only_its_measurements(scratch, tmp_path):
    config = base(scratch)
    run_campaign(tmp_path, config)
    first = started(tmp_path)
    assert len(first) == 3 * 2  # raw, ext4, xfs; write and read

    config["io"]["block_sizes"] = ["1MiB", "4MiB"]
    run_campaign(tmp_path, config)
    now = started(tmp_path)
    assert changed(first, now) == {
        f"demo/{t}/seq-4MiB-buffered-1s/rep1/{op}.json" for t in ("raw", "ext4", "xfs") for op in ("write", "read")
    }

    config["filesystems"]["xfs"]["mount"] = ["noatime"]
    run_campaign(tmp_path, config)
    again = started(tmp_path)
    assert {k.split("/")[1] for k in changed(now, again)} == {"xfs"} and len(changed(now, again)) == 4

    config["filesystems"]["btrfs"] = {"type": "btrfs"}
    run_campaign(tmp_path, config)
    more = started(tmp_path)
    assert {k.split("/")[1] for k in changed(again, more)} == {"btrfs"} and len(changed(again, more)) == 4

    config["io"]["repeats"] = 2
    assert planned(run_campaign(tmp_path, config, "--dry-run")) == {
        "mkfs": "6",
        "mount": "6",
        "write": "8",
        "read": "8",
        "release": "1",
        "aggregate": "1",
        "plots": "1",
        "provenance": "1",
        "history": "1",  # the new rows appended to the results store
        "all": "1",
        "total": "34",
    }
    run_campaign(tmp_path, config)
    last = started(tmp_path)
    assert {k.split("/")[3] for k in changed(more, last)} == {"rep2"} and len(changed(more, last)) == 4 * 2 * 2

    nothing = run_campaign(tmp_path, copy.deepcopy(config), "--dry-run")
    assert "Nothing to be done" in nothing.stdout + nothing.stderr

    # --forcerun mkfs: every filesystem cell from its mkfs on; the array and the raw cells are left alone
    forced = run_campaign(tmp_path, config, "--dry-run", "--forcerun", "mkfs")
    fs_cells = 3 * 2 * 2  # ext4, xfs, btrfs; two block sizes; two repeats
    assert planned(forced) == {
        "mkfs": str(fs_cells),
        "mount": str(fs_cells),
        "write": str(fs_cells),
        "read": str(fs_cells),
        "release": "1",
        "aggregate": "1",
        "plots": "1",
        "provenance": "1",
        "history": "1",
        "all": "1",
        "total": str(4 * fs_cells + 6),
    }

    # fsbench upgraded (another checkout, its step script and engine edited): the finished campaign stays finished.
    other = tmp_path.parent / "another-checkout"
    skip = shutil.ignore_patterns(".git", ".venv", "results", ".snakemake", "_build", "__pycache__", ".*_cache")
    shutil.copytree(REPO, other, ignore=skip)
    for script in ("scripts/write.py", "scripts/fsbench/engines/python.py", "rules/measure.smk"):
        with open(other / script, "a") as f:
            f.write("\n# a change of fsbench's code that is not a change of method\n")
    # Nothing is measured; the engine table, and so python.py, is among what the analysis imports (io500's table
    # through campaign.config): the tables and plots are made again (seconds). (history appends the rewritten
    # measurements.csv again: it adds nothing, each row is in the store already)
    upgraded = run_campaign(tmp_path, copy.deepcopy(config), "--dry-run", checkout=other)
    assert planned(upgraded) == TABLES_AGAIN

    # The code that makes the tables and plots changed: the same.
    with open(other / "scripts/fsbench/analysis/stats.py", "a") as f:
        f.write("\n# a new fsbench's statistics\n")
    tables = run_campaign(tmp_path, copy.deepcopy(config), "--dry-run", checkout=other)
    assert planned(tables) == TABLES_AGAIN

    # The python engine's method bumped on purpose: its cells (all of them here), and nothing else, again.
    engines = other / "scripts/fsbench/engines/table.py"
    python_now = '"mixed": mixed.run},\n        method=3,'
    assert python_now in engines.read_text(), "the python engine's entry of the table changed: adapt this test"
    engines.write_text(engines.read_text().replace(python_now, python_now.replace("method=3", "method=4"), 1))
    kept = run_campaign(tmp_path, copy.deepcopy(config), "--dry-run", checkout=other)
    # A finished campaign keeps its figures (methods: recorded, the default), and the run says why before any job.
    assert planned(kept) == planned(tables), kept.stdout
    said = [line for line in kept.stderr.splitlines() if "older method" in line]
    assert said == [
        "fsbench: 16 finished cell repeats were measured with an older method and keep their figures "
        "(methods: recorded): 16 python (method 3, now 4: no change recorded). New cells are measured with the "
        "current method and no verdict compares across methods; `methods: current` measures them again."
    ], kept.stderr
    # A new block size of that campaign is measured with today's method: only its cells run.
    grown = copy.deepcopy(config) | {"io": config["io"] | {"block_sizes": ["1MiB", "2MiB", "4MiB"]}}
    assert planned(run_campaign(tmp_path, grown, "--dry-run", checkout=other))["write"] == str(4 * 2)
    # Asked for: every filesystem cell from its mkfs on (as --forcerun mkfs above), and the raw cells' write and read.
    current = run_campaign(tmp_path, copy.deepcopy(config) | {"methods": "current"}, "--dry-run", checkout=other)
    assert planned(current) == planned(forced) | {"write": "16", "read": "16", "total": "62"}
    assert "Params have changed since last execution" in current.stdout + current.stderr
    assert "16 finished cell repeats measured with an older method are measured again" in current.stderr


# What a run of the workflow needs of a checkout (tests, docs and tools are not among it).
WORKFLOW = ("Snakefile", "rules", "scripts", "config", "captions", "envs", "profiles")


def device_steps(work) -> dict:
    """Every file the measuring and device steps wrote (records and state), with when it was written."""
    results = work / "results/keep"
    return {
        str(p.relative_to(results)): p.stat().st_mtime_ns for d in ("runs", "state") for p in (results / d).rglob("*")
    }


def ran(run) -> dict:
    """Jobs by rule, as a real run started them."""
    return Counter(re.findall(r"^(?:local)?rule (\w+):$", run.stdout + run.stderr, re.M))


def test_a_change_of_the_analysis_code_remakes_only_tables_and_plots(scratch, tmp_path):
    """Each file the scripts of aggregate and plots import (fsbench.workflow.digest) changed: aggregate, plots and
    history run again (seconds), and no step that touches a device. A file under measurement/ or engines/ that they
    do not import changed: nothing runs, by design (docs/guide.md, "What is decided by what")."""
    checkout, work = tmp_path / "fsbench", tmp_path / "work"
    checkout.mkdir()
    for part in WORKFLOW:
        if (REPO / part).is_dir():
            shutil.copytree(REPO / part, checkout / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / part, checkout / part)
    config = base(scratch) | {"filesystems": {"ext4": {"type": "ext4"}}}
    config["arrays"]["demo"]["size"] = "128MiB"
    config["io"]["size"] = "4MiB"
    run_campaign(work, config, checkout=checkout)
    measured, steps = started(work), device_steps(work)
    assert len(measured) == 2 * 2  # raw and ext4; write and read

    scripts = checkout / "scripts"
    closure = analysis_files([scripts / "aggregate.py", scripts / "plot.py"])
    assert len(closure) > 20
    for path in closure:
        text = path.read_text()
        path.write_text(text + "# a new fsbench's analysis\n")
        assert planned(run_campaign(work, config, "--dry-run", checkout=checkout)) == TABLES_AGAIN, path
        path.write_text(text)

    # One line of report/ (summary.html's note): a real run remakes the tables and plots with it, measuring nothing.
    package = scripts / "fsbench"
    old, new = "The same figures unrounded:", "The same figures, unrounded:"
    assert old in (package / "report/summary.py").read_text(), "summary.html's note changed: adapt this test"
    (package / "report/summary.py").write_text((package / "report/summary.py").read_text().replace(old, new))
    done = run_campaign(work, config, checkout=checkout)
    assert ran(done) == {"aggregate": 1, "plots": 1, "history": 1, "all": 1}
    assert started(work) == measured and device_steps(work) == steps
    assert new in (work / "results/keep/summary.html").read_text()  # made by the changed code

    # How a cell is measured and recorded changed, its method not: a finished campaign stays finished.
    outside = [p for d in ("measurement", "engines") for p in sorted((package / d).glob("*.py")) if p not in closure]
    outside.append(package / "engines/loops.c")  # every engines/*.py is in the closure, through the engine table
    assert any(p.parent.name == "measurement" for p in outside)
    for path in outside:
        with open(path, "a") as f:
            f.write("// a change of fsbench's code that is not a change of method\n")
    again = run_campaign(work, config, "--dry-run", checkout=checkout)
    assert "Nothing to be done" in again.stdout + again.stderr
