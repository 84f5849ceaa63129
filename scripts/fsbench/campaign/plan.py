"""The campaign as Snakemake jobs: each cell's settings (the params of its steps), the order its jobs run
in (their priority), and the state files that chain a cell's device steps within one run.

Everything here is plain Python the rules call (rules/common.smk); each function is cheap and memoised,
because Snakemake calls it once per job when it plans a campaign of thousands of cells.
"""

import functools
import json
import re
from collections import Counter
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
    CellSpec,
    MetaCell,
    all_hosts_segments,
    all_targets,
    array_dir,
    cell_hosts,
    cells,
    clients_point,
    fingerprint,
    io500_places,
    io_tests,
    is_all_hosts,
    is_metadata,
    measuring_hosts,
    meta_tests,
    repeat_plan,
    targets,
)
from fsbench.campaign.config import load_schema
from fsbench.engines.table import method_changes, method_params, method_version, method_workload

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


# The record that says a cell's repeat is finished, by workload: `methods: recorded` reads the method from it.
FINISHED = {"io": "read", "metadata": "metadata", "io500": "mdtest-hard-delete"}


def finished_cells(results) -> dict[tuple, dict]:
    """Each finished cell repeat's settings as its record keeps them, by (host, array, target, test, rep): one
    walk of runs/ when the workflow is read, never a file touched per job."""
    runs = Path(results, "runs")
    found = {}
    for step in FINISHED.values():
        for path in runs.glob(f"*/*/*/*/rep*/{step}.json"):
            host, array, target, test, rep = path.relative_to(runs).parts[:5]
            try:
                found[host, array, target, test, int(rep.removeprefix("rep"))] = json.loads(path.read_text())["cell"]
            except (OSError, ValueError, KeyError):  # a record cut short: the cell is not finished
                continue
    return found


# What a step adds to a cell's settings in its record (an all-hosts cell's meeting place), not a param of it.
ADDED_BY_STEP = ("shared_dir", "hosts", "slots", "slot_base")


@functools.cache
def io500_defaults() -> dict:
    """The io500 block's keys that have a default of their own (config/schema.yaml)."""
    keys = load_schema()["properties"]["io500"]["properties"]
    return {k: v["default"] for k, v in keys.items() if "default" in v and not isinstance(v["default"], dict)}


def _as_then(now: dict, then: dict) -> dict:
    """A cell's settings without what a newer method brought in at its default: io500 keys that the record's
    io500 block lacks and that the campaign leaves at their defaults (a newer fsbench's, e.g. drop-caches)."""
    if not (now.get("io500") and then.get("io500")):
        return now
    new = io500_defaults()
    kept = {k: v for k, v in now["io500"].items() if k in then["io500"] or k not in new or new[k] != v}
    return now | {"io500": kept}


def same_but_method(spec: dict, recorded: dict) -> bool:
    """Whether a cell's params and a record's settings differ in nothing but the method (and what a newer method
    brought in at its default)."""
    now = json.loads(json.dumps(CellSpec.from_params(spec).as_record()))  # as records keep them
    then = {k: v for k, v in recorded.items() if k in now or k not in ADDED_BY_STEP}
    now.pop("method", None), then.pop("method", None)
    return _as_then(now, then) == then


class Plan:
    """A validated campaign's cells as the rules see them. With `results` (the campaign's folder), its finished
    cells keep the method they were measured with unless the campaign says `methods: current`."""

    def __init__(self, campaign: dict, results=None):
        self.campaign = campaign
        self.results = results
        self.finished = finished_cells(results) if results else {}
        # finished cell repeat -> (workload, its recorded method, the code's), where those differ (Plan.older)
        self.older_methods: dict[tuple, tuple] = {}
        self.io = campaign["io"]
        self.targets = all_targets(campaign)
        # the host wildcard's values, in order: the measuring hosts, all, and a clients axis's points
        segments = [s for s in all_hosts_segments(campaign) if s != ALL_HOSTS]
        self.host_order = measuring_hosts(campaign) + [ALL_HOSTS] + segments
        self.repeats = repeat_plan(self.io)
        self.min_reps, self.max_reps = self.repeats["min"], self.repeats["max"]
        self.adaptive = isinstance(self.io["repeats"], dict)
        own = io_tests(campaign)
        every = own + [t for seg in segments for t in io_tests(campaign, seg) if t not in own]
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
        spec = {
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
            # Verified cells only: an unverified cell keeps the params it had.
            **({"verify": True} if self.io["verify"] else {}),
            "engine": self.io["engine"],
            # Huge-page buffers where asked for (io.buffer): the default, 4 KiB pages, is the method's own.
            **({"buffer": "hugepage"} if self.io["buffer"] == "hugepage" else {}),
            # A deliberate change of how the engine measures (table.ENGINES[...].method) re-measures, unless a
            # finished cell keeps its own (methods: recorded).
            **method_params(self.io["engine"], cell.iodepth),
            "cache": self.io["cache"],
            **self._storage(host, array, target),
        }
        return self._method_kept(spec, self.io["engine"], (host, array, target, test, int(rep)), cell.iodepth)

    def _meta_spec(self, host: str, array: str, target: str, test: str, rep) -> dict:
        cell = MetaCell.from_wildcards(host, array, target, test, rep)
        spec = {
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
            **({"verify": True} if self.io["verify"] else {}),
            "engine": "python",
            **method_params("metadata"),
            "cache": self.io["cache"],
            **self._storage(host, array, target),
        }
        return self._method_kept(spec, "metadata", (host, array, target, test, int(rep)))

    def read_from(self, host: str) -> str | None:
        """io.read_from where the campaign sets it; else other for an all-hosts cell of several hosts (IOR -C:
        no host reads back what its own client cached); else None (each stream reads its own, as always)."""
        if "read_from" in self.io:
            return self.io["read_from"]
        return "other" if is_all_hosts(host) and len(cell_hosts(self.campaign, host)) > 1 else None

    def _io500_spec(self, host: str, array: str, target: str, rep) -> dict:
        """IO500's settings as validated (sizes in bytes); reads from another process unless io.read_from: self."""
        point = clients_point(host)
        spec = {
            **self._place(host, array, target),
            # a clients point's processes per host; the campaign's own elsewhere (their cells keep their params)
            "io500": self.campaign["io500"] | ({"processes": point[1]} if point else {}),
            "read_from": self.io.get("read_from", "other"),
            "rep": int(rep),
            "test": IO500_TEST,
            **method_params("io500"),
            **self._storage(host, array, target),
        }
        return self._method_kept(spec, "io500", (host, array, target, IO500_TEST, int(rep)))

    def _method_kept(self, spec: dict, workload: str, key: tuple, iodepth: int = 1) -> dict:
        """`spec` with the method its finished record holds, where that is older than the code's and the campaign
        keeps recorded methods (the default), so that the cell is not measured again; else `spec` as it is.
        Only a record whose other settings are the cell's counts: a cell changed otherwise is measured anew."""
        recorded = self.finished.get(key)
        now = method_version(workload, iodepth)
        if recorded is None or recorded.get("method", 1) == now or not same_but_method(spec, recorded):
            return spec
        old = recorded.get("method", 1)
        self.older_methods[key] = (method_workload(workload, iodepth), old, now)
        if self.campaign["methods"] == "current":
            return spec
        # The params as they were (Snakemake compares their repr, so each key keeps its place): the recorded method,
        # none at version 1, and an io500 block without the keys a newer method brought in at their defaults.
        then = _as_then(spec, recorded)
        return {k: old if k == "method" else then[k] for k in spec if k != "method" or old > 1}

    def older(self) -> str | None:
        """What a run says before any device step when finished cells hold an older method than the code's: how
        many, of which workload, what changed, and whether they are kept (methods: recorded) or measured again."""
        for key in self.planned_finished():
            self.cell_spec(*key)
        if not self.older_methods:
            return None
        kept = self.campaign["methods"] != "current"
        counts = Counter(self.older_methods.values())
        found = [
            f"{n} {workload} (method {old}, now {now}: {method_changes(workload, old, now)})"
            for (workload, old, now), n in sorted(counts.items())
        ]
        total = len(self.older_methods)
        if kept:
            return (
                f"fsbench: {total} finished cell repeats were measured with an older method and keep their figures "
                f"(methods: recorded): {'; '.join(found)}. New cells are measured with the current method and "
                "no verdict compares across methods; `methods: current` measures them again."
            )
        return f"fsbench: {total} finished cell repeats measured with an older method are measured again " + (
            f"(methods: current): {'; '.join(found)}."
        )

    @functools.cache  # noqa: B019
    def io500_phases(self, host: str, array: str, target: str, order: tuple[str, ...]) -> tuple[str, ...]:
        """An IO500 cell's phases: today's (`order`, fsbench.io500.phases.order), or, where a finished cell keeps the
        older method it was measured with, those its records hold (a phase added since is not run for it: it
        would stand in the chain before phases that were measured, and so measure them again)."""
        key = (host, array, target, IO500_TEST, 1)
        self.cell_spec(*key)  # finds whether it keeps its method
        if key not in self.older_methods or self.campaign["methods"] == "current":
            return order
        folder = Path(self.results, "runs", host, array, target, IO500_TEST, "rep1")
        return tuple(phase for phase in order if (folder / f"{phase}.json").exists())

    def planned_finished(self) -> list[tuple]:
        """The finished cell repeats that this campaign still plans (a cell it no longer has is not its business)."""
        if not self.finished:  # a new campaign: no walk over its cells when the workflow is read
            return []
        places = {(c.host, c.array, c.target, c.test, c.rep) for c in cells(self.campaign)}
        places |= {(h, a, t, IO500_TEST, 1) for h, a, t in io500_places(self.campaign)}
        return [key for key in self.finished if key in places or (key[:4] + (1,) in places and self.adaptive)]

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
            "host": {h: i for i, h in enumerate(self.host_order)},
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
