"""The campaign as Snakemake jobs: each cell's settings (the params of its steps), the order its jobs run
in (their priority), and the state files that chain a cell's device steps within one run.

Everything here is plain Python the rules call (rules/common.smk); each function is cheap and memoised,
because Snakemake calls it once per job when it plans a campaign of thousands of cells.
"""

import functools
import re
from dataclasses import replace
from pathlib import Path

from fsbench.campaign.cells import (
    ALL_HOSTS,
    IO500_TEST,
    LOCAL,
    META_PATTERN,
    MIXED,
    TEST_PATTERN,
    Cell,
    MetaCell,
    all_hosts_segments,
    all_targets,
    array_dir,
    cell_hosts,
    clients_point,
    fingerprint,
    hosts,
    is_all_hosts,
    is_metadata,
    meta_tests,
    repeat_plan,
    targets,
    tests,
)
from fsbench.engines.table import method_params

# The wildcards of the rules, as regexes: what a path segment may be.
WILDCARDS = {
    "host": "[A-Za-z0-9][A-Za-z0-9.-]*",
    "array": "[A-Za-z0-9][A-Za-z0-9_-]*",
    # the same, without named groups; or io500
    "test": re.sub(r"\?P<\w+>", "?:", f"(?:{TEST_PATTERN}|{META_PATTERN}|{IO500_TEST})"),
    "rep": r"\d+",
    "k": r"\d+",
}


def forget_device_state(results) -> list[str]:
    """Delete every state file under results/<campaign>/state: after a release no device holds what they say,
    so the next run redoes each unfinished cell from its mkfs. Finished cells keep their records."""
    gone = sorted(Path(results, "state").glob("**/*.ready"))
    for path in gone:
        path.unlink(missing_ok=True)
    return [str(p) for p in gone]


class Plan:
    """A validated campaign's cells as the rules see them."""

    def __init__(self, campaign: dict):
        self.campaign = campaign
        self.io = campaign["io"]
        self.targets = all_targets(campaign)
        self.hosts = hosts(campaign) + [ALL_HOSTS] + [s for s in all_hosts_segments(campaign) if s != ALL_HOSTS]
        self.repeats = repeat_plan(self.io)
        self.min_reps, self.max_reps = self.repeats["min"], self.repeats["max"]
        self.adaptive = isinstance(self.io["repeats"], dict)
        io = self.io
        every = tests(io) + [t for seg in all_hosts_segments(campaign) for t in tests(io, seg) if t not in tests(io)]
        self.tests = [Cell(LOCAL, "", "", p, bs, d, s, 1, q, sf).test for bs, p, d, s, q, sf in every]
        # A target's metadata cells run after its block I/O cells, in each round.
        self.tests += [MetaCell(LOCAL, "", "", *settings, 1).test for settings in meta_tests(campaign)]
        self.tests += [IO500_TEST] if campaign["io500"] is not None else []  # after them: one run, rep 1
        self.fingerprints = {
            (a, name): fingerprint(fs, spec)
            for a, spec in campaign["arrays"].items()
            for name, fs in campaign["filesystems"].items()
        }

    @functools.cache  # noqa: B019 (one Plan per run: its cache lives as long as it)
    def cell_spec(self, host: str, array: str, target: str, test: str, rep) -> dict:
        """Everything that decides one measurement: a change to any of it re-measures the cell."""
        if is_metadata(test):
            return self._meta_spec(host, array, target, test, rep)
        if test == IO500_TEST:
            return self._io500_spec(host, array, target, rep)
        cell = Cell.from_wildcards(host, array, target, test, rep)
        return {
            **self._place(host, array, target),
            "pattern": cell.pattern,
            "block_size": cell.block_size,
            "direct": cell.direct,
            "streams": cell.streams,
            "iodepth": cell.iodepth,
            "shared_file": cell.shared_file,
            # Only where it matters: a new rwmix_read re-measures the mixed cells, no others.
            **({"rwmix_read": self.io["rwmix_read"]} if cell.pattern in MIXED else {}),
            # Where set, or where it defaults to other (an all-hosts cell of several hosts): others keep their params.
            **({"read_from": read_from} if (read_from := self.read_from(host)) else {}),
            # Time-based runs only (io.runtime, seconds): size-based cells keep the params they had.
            **({"runtime": self.io["runtime"]} if "runtime" in self.io else {}),
            # The time series' interval and what judges it, likewise only where the campaign sets them.
            **{key: self.io[key] for key in ("log_interval", "drop", "steady") if key in self.io},
            "rep": cell.rep,
            "test": test,
            "size": self.io["size"],
            "data": self.io["data"],
            "engine": self.io["engine"],
            # A deliberate change of how the engine measures (table.ENGINES[...].method) re-measures.
            **method_params(self.io["engine"], cell.iodepth),
            "cache": self.io["cache"],
            **self._storage(host, array, target),
        }

    def _meta_spec(self, host: str, array: str, target: str, test: str, rep) -> dict:
        cell = MetaCell.from_wildcards(host, array, target, test, rep)
        return {
            "workload": "metadata",
            **self._place(host, array, target),
            "files": cell.files,
            "file_size": cell.file_size,
            "dirs": cell.dirs,
            "fsync": cell.fsync,
            # Only where the campaign sets it: cells of campaigns without it keep the params they had.
            **({"meta_cache": self.campaign["metadata"]["cache"]} if "cache" in self.campaign["metadata"] else {}),
            "streams": cell.streams,
            "rep": cell.rep,
            "test": test,
            "data": self.io["data"],
            "engine": "python",
            **method_params("metadata"),
            "cache": self.io["cache"],
            **self._storage(host, array, target),
        }

    def read_from(self, host: str) -> str | None:
        """io.read_from where the campaign sets it; else other for an all-hosts cell of several hosts (IOR -C:
        no host reads back what its own client cached); else None (each stream reads its own, as always)."""
        if "read_from" in self.io:
            return self.io["read_from"]
        return "other" if is_all_hosts(host) and len(cell_hosts(self.campaign, host)) > 1 else None

    def _io500_spec(self, host: str, array: str, target: str, rep) -> dict:
        """IO500's settings as validated (sizes in bytes); reads from another process unless io.read_from: self."""
        point = clients_point(host)
        return {
            **self._place(host, array, target),
            # a clients point's processes per host; the campaign's own elsewhere (their cells keep their params)
            "io500": self.campaign["io500"] | ({"processes": point[1]} if point else {}),
            "read_from": self.io.get("read_from", "other"),
            "rep": int(rep),
            "test": IO500_TEST,
            **method_params("io500"),
            **self._storage(host, array, target),
        }

    def _place(self, host: str, array: str, target: str) -> dict:
        """Which campaign, host, array and target a cell is of, and the filesystem type there."""
        fs = self.campaign["filesystems"].get(target)
        return {
            "campaign": self.campaign["campaign"],
            "host": host,
            "array": array,
            "target": target,
            "fs_type": fs["type"] if fs else target,
        }

    def _storage(self, host: str, array: str, target: str) -> dict:
        """How the cell's array and filesystem are made, and where they live on the host."""
        fs = self.campaign["filesystems"].get(target)
        return {
            "array_spec": self.campaign["arrays"][array],
            # The fingerprint changes when anything that shapes the filesystem changes.
            "fs": fs | {"name": target, "fingerprint": self.fingerprints[array, target]} if fs else None,
            # Where the array's images, mount point and state live on the host (fsbench.campaign.cells.array_dir).
            "workdir": str(array_dir(self.campaign["scratch"], self.campaign["campaign"], array, host)),
        }

    @functools.cache  # noqa: B019
    def device_spec(self, host: str, array: str, target: str, test: str, rep) -> dict:
        """What mkfs and mount depend on: the array, the filesystem, the cell and its repeat (not the I/O)."""
        keep = ("campaign", "host", "array", "target", "fs_type", "test", "rep", "array_spec", "fs", "workdir")
        full = self.cell_spec(host, array, target, test, rep)
        return {k: full[k] for k in keep}

    @functools.cache  # noqa: B019
    def partners(self, host: str, array: str, target: str, test: str) -> list[tuple[str, str]]:
        """The (target, test) of every cell a cell is compared with (compare.comparisons): each other target
        on its array with the same test, and its own target at the next smaller and the next larger block size."""
        cell = Cell.from_wildcards(host, array, target, test, 1)
        found = [(t, test) for t in targets(self.campaign, array) if t != target]
        sizes = sorted(set(self.io["block_sizes"]))
        i = sizes.index(cell.block_size)
        return found + [
            (target, replace(cell, block_size=bs).test) for bs in sizes[max(i - 1, 0) : i] + sizes[i + 1 : i + 2]
        ]

    @functools.cached_property
    def _order(self) -> dict:
        return {
            "host": {h: i for i, h in enumerate(self.hosts)},
            "array": {a: i for i, a in enumerate(self.campaign["arrays"])},
            "target": {t: i for i, t in enumerate(self.targets)},
            "test": {t: i for i, t in enumerate(self.tests)},
        }

    @property
    def top_priority(self) -> int:
        o = self._order
        return (self.max_reps + 1) * len(o["host"]) * len(o["array"]) * len(o["target"]) * len(o["test"]) + 1

    def priority(self, host: str, array: str, target: str, test: str, rep) -> int:
        """Every job of a cell and repeat shares one priority, and no two cells share one: with one device job at
        a time (storage_io=1) the scheduler then runs a cell's steps back to back, mkfs to read, and nothing
        reaches the device between a write and its read. Repeats run in rounds (every cell's rep 1, then every
        rep 2, ...) so that drift over time spreads over all cells; within a round hosts, arrays, then
        targets in config order (raw first), then tests."""
        o = self._order
        seq = int(rep) - 1
        for name, value in (("host", host), ("array", array), ("target", target), ("test", test)):
            seq = seq * len(o[name]) + o[name][value]
        return self.top_priority - 1 - seq
