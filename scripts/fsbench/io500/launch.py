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
    and mount or the array, for the first)."""
    record_dir = Path(record_dir)
    record_dir.mkdir(parents=True, exist_ok=True)
    root = root_of(cell)
    _check_target(cell, root)
    names = list(hosts) if is_all_hosts(cell.host) else [cell.host]
    spec = {"root": str(root), "io500": cell.io500, "read_from": cell.read_from, "hosts": names}
    p = cell.io500["processes"]
    nprocs = p * len(names)
    made = dict(before.get("items", {}))
    if phase == ph.PHASES[0]:
        run.prepare(root, nprocs)
    if phase in ph.WRITES:
        items = run.limit_of(spec, phase)
        (root / ".sync" / phase).mkdir(exist_ok=True)
    else:
        items = made.get(ph.MADE_BY.get(phase), 0)
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
    procs = [q for part in parts for q in part["processes"]]
    record = figure(cell, phase, procs, parts, items, nprocs, made)
    starts = [min(q["start"] for q in part["processes"]) for part in parts]
    record["start_spread_s"] = max(starts) - min(starts)  # the last host's first process after the first host's
    if phase in ph.WRITES:
        made[phase] = record["items_per_process"]
    if phase == ph.PHASES[-1]:
        shutil.rmtree(root, ignore_errors=True)  # what is left (the ior files) goes with the last phase
    log.info(
        "%s: %.4g %s in %.3f s%s",
        phase,
        record["value"],
        record["unit"],
        record["seconds"],
        "" if record["valid"] else f"; not valid for the list: {record['invalid_reasons']}",
    )
    setup = before.get("setup", before)
    more = {"command": command, "cell": cell.as_record(), "setup": setup, "machine": provenance.machine()}
    return record | {"items": made} | more


def figure(cell: CellSpec, phase: str, procs: list, parts: list, items: int, nprocs: int, made: dict) -> dict:
    """The phase's figure over every process of every host: bytes (ior, GiB/s) or items (kIOPS) over the time
    from the first start to the last end (a write's durable end: its flush is inside), and why the list would
    not take it."""
    start = min(q["start"] for q in procs)
    seconds = max(q["end_durable"] for q in procs) - start
    total_items = sum(q["items"] for q in procs)
    amount = sum(q["bytes"] for q in procs) if phase.startswith("ior-") else total_items
    extra = []
    if phase == "find":
        # the mdtest files, ior-easy's file per process and ior-hard's one file
        expected = (made["mdtest-easy-write"] + made["mdtest-hard-write"] + 1) * nprocs + 1
        if total_items != expected:
            extra.append(f"find counted {total_items} files, {expected} were created")
        found, matching = sum(q["found"] for q in procs), ph.find_matches(nprocs, made["mdtest-hard-write"])
        if found != matching:
            extra.append(f"find found {found} files, {matching} match")
    elif phase not in ph.WRITES and total_items != items * nprocs:
        extra.append(f"moved {total_items} items, {items * nprocs} were made")
    cached = [part["cached_before"] for part in parts if part.get("cached_before") is not None]
    if cached and max(cached) > CACHED_LIMIT:
        extra.append(f"began with {max(cached):.0%} of its data cached: not a cold read")
    per_process = {q["items"] for q in procs}
    if phase in ph.WRITES and len(per_process) != 1:
        extra.append(f"processes made {sorted(per_process)} items: the wear-out did not even them out")
    why = ph.reasons(phase, seconds, cell.io500.get("stonewall-time"), extra)
    return {
        "step": "io500",
        "phase": phase,
        "value": ph.value_of(phase, amount, seconds),
        "unit": ph.unit(phase),
        "seconds": seconds,
        "valid": not why,
        "invalid_reasons": "; ".join(why),
        "amount": amount,
        "items_per_process": max(per_process),
        **({"found": sum(q["found"] for q in procs)} if phase == "find" else {}),
        "started_at": start,
        "hosts": {part["host"]: {k: v for k, v in part.items() if k != "host"} for part in parts},
    }
