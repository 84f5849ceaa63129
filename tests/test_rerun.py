"""Campaigns people keep: each change re-measures only what it touches (checked by the records' started_at)."""

import copy
import json
import re
import shutil

import pytest

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
    upgraded = run_campaign(tmp_path, copy.deepcopy(config), "--dry-run", checkout=other)
    assert "Nothing to be done" in upgraded.stdout + upgraded.stderr

    # The code that makes the tables and plots changed: those are made again (seconds), nothing is measured.
    with open(other / "scripts/fsbench/analysis/stats.py", "a") as f:
        f.write("\n# a new fsbench's statistics\n")
    tables = run_campaign(tmp_path, copy.deepcopy(config), "--dry-run", checkout=other)
    # (history appends the rewritten measurements.csv again: it adds nothing, each row is in the store already)
    assert planned(tables) == {"aggregate": "1", "plots": "1", "history": "1", "all": "1", "total": "4"}

    # The python engine's method bumped on purpose: its cells (all of them here), and nothing else, again.
    engines = other / "scripts/fsbench/engines/table.py"
    python_v1 = '"mixed": mixed.run},\n        method=1,'
    assert python_v1 in engines.read_text(), "the python engine's entry of the table changed: adapt this test"
    engines.write_text(engines.read_text().replace(python_v1, python_v1.replace("method=1", "method=2"), 1))
    bumped = run_campaign(tmp_path, copy.deepcopy(config), "--dry-run", checkout=other)
    # Every filesystem cell from its mkfs on (as --forcerun mkfs above), and the raw cells' write and read.
    assert planned(bumped) == planned(forced) | {"write": "16", "read": "16", "total": "62"}
    assert "Params have changed since last execution" in bumped.stdout + bumped.stderr
