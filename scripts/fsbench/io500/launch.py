"""One IO500 phase of one target as a step: every host's processes at once (run.part on each, through the
all-hosts launcher), then one record: the phase's figure (IO500's units), its seconds, whether the list would
take it and why not, each host's and each process's share, and how much each write phase made (items), which
the phases after it read, stat, find and delete."""

import json
import logging
import shutil
import time
from pathlib import Path

from fsbench.campaign.cells import CellSpec, is_all_hosts
from fsbench.io500 import phases as ph
from fsbench.io500 import run
from fsbench.measurement import all_hosts, provenance
from fsbench.storage import devices
from fsbench.toolkit import barrier
from fsbench.toolkit.flags import CACHED_LIMIT
from fsbench.toolkit.system import ToolError

log = logging.getLogger("fsbench")


def root_of(cell: CellSpec) -> Path:
    """The target's io500 folder: on a path array (shared by every host), or on the mounted filesystem."""
    if cell.target == "path":
        return Path(cell.array_spec["path"]) / f"fsbench-{cell.campaign}-{cell.array}-io500"
    return Path(cell.workdir) / "mnt" / "fsbench-io500"


def _check_target(cell: CellSpec, root: Path) -> None:
    where = root.parent
    if cell.target != "path" and devices.mount_at(where) is None:
        raise devices.DeviceError(f"{where} is no longer mounted: another step changed the device in between")
    if not where.is_dir():
        raise devices.DeviceError(f"{where} is gone")


def phase_step(cell: CellSpec, phase: str, before: dict, hosts: list[str], record_dir) -> dict:
    """`phase` on the cell's target from every host; `before` is the previous phase's record (the setup's, mkfs
    and mount or the array, for the first). The records carry on what each write phase made (`items`, per
    process) and which inodes it wrote (`writers`), which the phases after it act on."""
    record_dir = Path(record_dir)
    record_dir.mkdir(parents=True, exist_ok=True)
    root = root_of(cell)
    _check_target(cell, root)
    names = list(hosts) if is_all_hosts(cell.host) else [cell.host]
    spec = {"root": str(root), "io500": cell.io500, "read_from": cell.read_from, "hosts": names}
    p = cell.io500["processes"]
    nprocs = p * len(names)
    kind, order = ph.BY_NAME[phase], ph.order(cell.io500["mode"])
    made, writers = dict(before.get("items", {})), dict(before.get("writers", {}))
    if phase == order[0]:
        run.prepare(root, nprocs)
    if kind.kind == "dummy":
        return _timestamp(cell, root, before, made, writers)
    if not cell.io500.get(phase, {}).get("run", True):
        return _not_run(cell, root, phase, before, made, writers)
    items = run.limit_of(spec, phase) if kind.write else 0  # a find's: what it finds
    if kind.made_by:  # what the write phase made
        items = made.get(kind.made_by, 0)
    if phase == "ior-rnd4K-easy-read" and items:  # io500's segment count of random 4 KiB reads, to the stonewall
        items = run.limit_of(spec, phase)
    if kind.stonewalled:
        run.fresh(root, phase, nprocs)
    for name in names:
        (record_dir / f"{name}-{phase}.json").unlink(missing_ok=True)
    if is_all_hosts(cell.host):
        spec_file = record_dir / f"{phase}.spec.json"
        spec_file.write_text(json.dumps(spec))
        args = lambda port: [str(spec_file), phase, port, str(items), str(record_dir)]  # noqa: E731
        argv_of = lambda port: all_hosts.part_argv(names, args(port), "io500-part")  # noqa: E731
        done = barrier.run_parts(argv_of, len(names), all_hosts.part_env())
        argv = done.args
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines()
            said = [x for x in lines if x.startswith("fsbench:")] or lines[-5:] or ["no output"]
            raise ToolError(f"io500 {phase} on {', '.join(names)} failed (exit {done.returncode}): " + " | ".join(said))
        parts = [run.read_part(record_dir, name, phase) | {"host": name} for name in names]
        command = " ".join(argv)
    else:
        start_at = time.time() + run.LOCAL_DELAY
        record = record_dir / f"{cell.host}-{phase}.json"
        parts = [run.part(spec, phase, lambda: start_at, 0, items, record) | {"host": cell.host}]
        command = f"fsbench io500 {phase}: {p} forked process(es) on this host"
    _opened(phase, parts, writers)
    procs = [q for part in parts for q in part["processes"]]
    record = figure(cell, phase, procs, parts, items, nprocs, made)
    starts = [min(q["start"] for q in part["processes"]) for part in parts]
    record["start_spread_s"] = max(starts) - min(starts)  # the last host's first process after the first host's
    if kind.write:
        made[phase] = record["items_per_process"]
    if phase == order[-1]:
        shutil.rmtree(root, ignore_errors=True)  # what is left (ior-easy's files, after their 4 KiB re-reads) goes
    log.info(
        "%s: %.4g %s in %.3f s%s%s",
        phase,
        record["value"],
        record["unit"],
        record["seconds"],
        "" if record["valid"] else f"; [INVALID]: {record['invalid_reasons']}",
        f"; doubts: {record['doubts']}" if record["doubts"] else "",
    )
    return record | {"items": made, "writers": writers} | _more(cell, before, command)


def _more(cell: CellSpec, before: dict, command: str) -> dict:
    setup = before.get("setup", before)
    return {"command": command, "cell": cell.as_record(), "setup": setup, "machine": provenance.machine()}


def _timestamp(cell: CellSpec, root: Path, before: dict, made: dict, writers: dict) -> dict:
    """io500's timestamp phase (a dummy, unscored): the file find's -newer compares with, made now."""
    t0 = time.time()
    run.timestamp(root).touch()
    seconds = time.time() - t0
    record = {"step": "io500", "phase": "timestamp", "value": 0.0, "unit": ph.unit("timestamp"), "seconds": seconds}
    record |= {"valid": True, "invalid_reasons": "", "doubts": "", "amount": 0, "items_per_process": 0}
    record |= {"started_at": t0, "hosts": {}, "timestamp_file": str(run.timestamp(root))}
    return record | {"items": made, "writers": writers} | _more(cell, before, f"touch {run.timestamp(root)}")


def _not_run(cell: CellSpec, root: Path, phase: str, before: dict, made: dict, writers: dict) -> dict:
    """A phase its io500 block says not to run (io500's run = FALSE): as io500 prints it, a figure of 0 and so
    [INVALID]. The last phase still removes what is left."""
    why = ph.invalid(phase, 0.0, 0.0, cell.io500["stonewall-time"])
    record = {"step": "io500", "phase": phase, "run": False, "value": 0.0, "unit": ph.unit(phase), "seconds": 0.0}
    record |= {"valid": False, "invalid_reasons": "; ".join(why), "amount": 0, "items_per_process": 0}
    record |= {"doubts": f"not run: io500.{phase}.run is false", "started_at": time.time(), "hosts": {}}
    if phase == ph.order(cell.io500["mode"])[-1]:
        shutil.rmtree(root, ignore_errors=True)
    log.info("%s: not run (io500.%s.run: false)", phase, phase)
    return record | {"items": made, "writers": writers} | _more(cell, before, f"none: io500.{phase}.run is false")


def _opened(phase: str, parts: list, writers: dict) -> None:
    """What each process opened (the inode of its file, or its first file) against the writers recorded for
    that inode: a write phase records itself as the writer of what it opened; a later phase's process is told
    who wrote what it opened (`written_by`)."""
    kind = ph.BY_NAME[phase]
    for part in parts:
        for q in part["processes"]:
            if "opened" not in q:
                continue
            inode = str(q["opened"]["inode"])
            if kind.write:
                w = writers.setdefault(inode, {"phase": phase, "path": q["opened"]["path"], "ranks": [], "hosts": []})
                w["ranks"].append(q["rank"])
                w["hosts"] += [] if part["host"] in w["hosts"] else [part["host"]]
            else:
                q["written_by"] = writers.get(inode)


def figure(cell: CellSpec, phase: str, procs: list, parts: list, items: int, nprocs: int, made: dict) -> dict:
    """The phase's figure over every process of every host: bytes (ior, GiB/s) or items (kIOPS) over the time
    from the first start to the last end (a write's durable end: its flush is inside); whether io500 would
    print [INVALID] on it and why (its words), and fsbench's own doubts about the figure."""
    kind = ph.BY_NAME[phase]
    start = min(q["start"] for q in procs)
    seconds = max(q["end_durable"] for q in procs) - start
    total_items = sum(q["items"] for q in procs)
    amount = sum(q["bytes"] for q in procs) if kind.kind == "ior" else total_items
    value = ph.value_of(phase, amount, seconds)
    doubts, found = [], sum(q.get("found", 0) for q in procs)
    if kind.kind == "find":
        easy, hard = made.get("mdtest-easy-write", 0), made.get("mdtest-hard-write", 0)
        expected, matching = {
            "find": ((easy + hard + 1) * nprocs + 1, ph.find_matches(nprocs, hard)),
            "find-easy": (easy * nprocs, ph.find_matches(nprocs, easy)),
            "find-hard": (hard * nprocs, ph.find_matches(nprocs, hard)),
        }[phase]
        if total_items != expected:
            doubts.append(f"{phase} counted {total_items} files, {expected} were created")
        if found != matching:
            doubts.append(f"{phase} found {found} files, {matching} match")
    elif not kind.write and not kind.stonewalled and total_items != items * nprocs:
        doubts.append(f"moved {total_items} items, {items * nprocs} were made")
    cached = [part["cached_before"] for part in parts if part.get("cached_before") is not None]
    if cell.io500["drop-caches"] and cached and max(cached) > CACHED_LIMIT:
        doubts.append(f"began with {max(cached):.0%} of its data cached after drop-caches: not a cold read")
    per_process = {q["items"] for q in procs}
    if kind.stonewalled and len(per_process) != 1:
        doubts.append(f"processes moved {sorted(per_process)} items: the wear-out did not even them out")
    errors = sum(q.get("errors", 0) for q in procs)
    if errors:
        first = next(q for q in procs if q.get("errors"))
        doubts.append(f"{errors} {'transfers' if kind.kind == 'ior' else 'files'} read back wrong; the first, "
                      f"of rank {first['rank']}: {first['first_error']}")  # fmt: skip
    why = ph.invalid(phase, seconds, value, cell.io500["stonewall-time"], errors, found if kind.kind == "find" else 1)
    return {
        "step": "io500",
        "phase": phase,
        "value": value,
        "unit": ph.unit(phase),
        "seconds": seconds,
        "valid": not why,
        "invalid_reasons": "; ".join(why),
        "doubts": "; ".join(doubts),
        "amount": amount,
        "items_per_process": max(per_process),
        **({"found": found} if kind.kind == "find" else {}),
        **({"errors": errors} if kind.verify else {}),
        "started_at": start,
        "hosts": {part["host"]: {k: v for k, v in part.items() if k != "host"} for part in parts},
    }
