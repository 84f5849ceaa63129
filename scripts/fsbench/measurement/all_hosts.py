"""All hosts at once on a shared path (IOR-style): every host writes its own files, all starting together,
then reads them back, all starting together. The cell's figure is the total bytes over the common wall
time, from the first host's start to the last host's end; each host's own figure is kept beside it.

The write and the read are each a job (rules write and read) on one node; it starts one part per host
with srun (one task per node) under Slurm, or, with this host as the only one, as a plain subprocess.
The parts start together at a barrier every part reaches once set up (fsbench.toolkit.barrier); the record says
the spread of their starts (start_spread_s: the last host's first stream start after the first host's).

The record also says per host when its first and last stream finished, the cell's first-done and last-done
host, the tail between them and the stonewall figure (what every host had moved when the first finished, over
that time), and flags `straggler` on a host far slower than the others (timeseries.stragglers).
"""

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from fsbench.campaign.cells import CellSpec, array_dir
from fsbench.cluster.hosts import check_host, part_host, short_hostname
from fsbench.engines import verify
from fsbench.engines.job import aggregate
from fsbench.measurement.judgement import series_of
from fsbench.measurement.measure import measure_read, measure_write
from fsbench.measurement.record import measurement_record
from fsbench.storage import arrays, devices
from fsbench.storage import layout as striping
from fsbench.toolkit import barrier, flags, timeseries
from fsbench.toolkit.records import read_json, write_json
from fsbench.toolkit.system import ToolError

PACKAGE_DIR = Path(__file__).resolve().parents[2]


def part_workdir(scratch: str, campaign: str, array: str, host: str) -> Path:
    """Each host's own folder for the cell (and so its own data folder on the shared path); see workdirs_here."""
    return array_dir(scratch, campaign, array, part_host(host))


def shared_folder(cell: CellSpec, scratch: str) -> tuple[Path, Path]:
    """Where the hosts of a shared-file cell meet: a folder on the shared path (its data), and the folder in
    scratch whose path.json names it, so that a release finds it (hosts.workdirs_here)."""
    workdir = array_dir(scratch, cell.campaign, cell.array, cell.host)
    data = Path(cell.array_spec["path"]) / f"fsbench-{cell.campaign}-{workdir.name}"
    return workdir, data


def _share(cell: CellSpec, hosts: list[str], op: str, scratch: str) -> dict:
    """A shared-file cell as its parts see it: one file in a folder every host sees, host h's streams taking
    slots h × streams ... of hosts × streams. The write starts from an empty folder; no part deletes the file
    (one host's unlink would cut another's writes or reads short): the read's end does (measure)."""
    workdir, data = shared_folder(cell, scratch)
    if op == "write":
        devices.release(workdir)  # a stale file of an interrupted run
        workdir.mkdir(parents=True, exist_ok=True)
        write_json(workdir / "path.json", {"data": str(data)})
        data.mkdir(exist_ok=True)
        if layout := cell.array_spec.get("layout"):  # as each host's own data folder has it (arrays.data_folder)
            striping.apply(str(data), layout, arrays.attach(cell.array_spec, workdir).fs_type, f"arrays.{cell.array}")
    return replace(cell, shared_dir=str(data), hosts=tuple(hosts), slots=len(hosts) * cell.streams)


def part(cell: CellSpec, op: str, start_line: str, scratch: str, record_dir: str) -> dict:
    """One host's share of one op, run on that host: set up (its files made empty and synced, or its cache
    dropped), wait at the start line (the launcher's port) for every other host, measure, keep the record."""
    host = short_hostname()
    workdir = part_workdir(scratch, cell.campaign, cell.array, host)
    workdir.mkdir(parents=True, exist_ok=True)
    state = arrays.attach(cell.array_spec, workdir, cell.array)
    state = arrays.data_folder(state, workdir, cell.array_spec.get("layout"), f"arrays.{cell.array}")
    if cell.shared_by_hosts:
        state = replace(state, path=cell.shared_dir)
        cell = replace(cell, slot_base=cell.hosts.index(host) * cell.streams)
    go = lambda: barrier.wait(start_line)  # noqa: E731 (after the host's setup, its sync and cache drop)
    if op == "write":
        record = measure_write(arrays.Target(state), cell, workdir, ready=go)
    elif cell.read_from == "other":  # IOR -C: host i reads what host i+1 wrote, from its own client
        other = cell.hosts[(cell.hosts.index(host) + 1) % len(cell.hosts)]
        if cell.shared_by_hosts:
            cell = replace(cell, slot_base=cell.hosts.index(other) * cell.streams)
        written = read_json(Path(record_dir) / f"{other}-write.json")
        record = measure_read(written, cell, workdir, other_host=other if other != host else None, ready=go)
    else:
        record = measure_read(read_json(Path(record_dir) / f"{host}-write.json"), cell, workdir, ready=go)
    record["row"]["host"] = f"{host}@{cell.host}"
    write_json(Path(record_dir) / f"{host}-{op}.json", record)
    if op == "read":
        if cell.read_from == "other" and not cell.shared_by_hosts:
            _wait_for_reads(cell.hosts, Path(record_dir))  # another host reads this host's files: let it finish
        devices.release(workdir)  # the host's data folder goes once its files are read (and deleted)
    return record["row"]


READ_WAIT_S = 3600.0  # the most a part waits for the others' reads (srun kills every part when one fails)


def _wait_for_reads(hosts, record_dir: Path) -> None:
    """Until every host's read record is there (each written once that host's read is done)."""
    deadline = time.time() + READ_WAIT_S
    while not all((record_dir / f"{h}-read.json").exists() for h in hosts):
        if time.time() > deadline:
            raise devices.DeviceError(f"the other hosts' reads did not finish within {READ_WAIT_S:.0f} s")
        time.sleep(0.1)


def part_argv(hosts: list[str], args: list[str], command: str = "part") -> list[str]:
    """The command that runs one part per host at once (`python -m fsbench <command>`, part or io500-part): srun
    under Slurm, else this host alone."""
    me = [sys.executable, "-m", "fsbench", command, *args]
    if os.environ.get("SLURM_JOB_ID"):
        n = len(hosts)
        return [
            "srun",
            "--overlap",
            f"--nodes={n}",
            f"--ntasks={n}",
            "--ntasks-per-node=1",
            f"--nodelist={','.join(hosts)}",
            "--kill-on-bad-exit=1",
            *me,
        ]
    if len(hosts) > 1:
        raise devices.DeviceError(
            f"the all-hosts cell of {', '.join(hosts)} needs Slurm to start a part on each: run it with "
            "--profile profiles/slurm (only a campaign whose one host is this one runs it without)"
        )
    check_host(hosts[0])
    return me


def part_env() -> dict:
    """This job's environment for the parts. Under Slurm this step runs inside the job step Snakemake made,
    whose SLURM_* variables describe that step (one node, one task); srun would take them for the whole
    allocation. Without them, srun asks the controller for the job's own allocation (SLURM_JOB_ID)."""
    keep = ("SLURM_JOB_ID", "SLURM_CONF")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_") or k in keep}
    return env | {"PYTHONPATH": str(PACKAGE_DIR)}


def measure(cell: CellSpec, op: str, hosts: list[str], scratch: str, record_dir) -> dict:
    """`op` (write, then in its own job read) on every host at once; one record for the whole cell."""
    record_dir = Path(record_dir)
    record_dir.mkdir(parents=True, exist_ok=True)
    if cell.shared_file:
        cell = _share(cell, hosts, op, scratch)
    elif cell.read_from == "other":
        cell = replace(cell, hosts=tuple(hosts))  # each part finds the next host's write among them
    spec = record_dir / "cell.json"
    spec.write_text(json.dumps(cell.as_record()))
    for host in hosts:
        (record_dir / f"{host}-{op}.json").unlink(missing_ok=True)
    argv_of = lambda port: part_argv(hosts, [str(spec), op, port, scratch, str(record_dir)])  # noqa: E731
    done = barrier.run_parts(argv_of, len(hosts), part_env())
    argv = done.args
    if done.returncode != 0:  # each part says what went wrong on its host (`fsbench: <host>: …`); srun adds noise
        lines = done.stderr.strip().splitlines()
        said = [line for line in lines if line.startswith("fsbench:")] or lines[-5:] or ["no output"]
        raise ToolError(f"{op} on {', '.join(hosts)} failed (exit {done.returncode}): " + " | ".join(said))
    if op == "read" and cell.shared_file:
        devices.release(shared_folder(cell, scratch)[0])  # every host has read the shared file: it goes
    parts = [read_json(record_dir / f"{host}-{op}.json") for host in hosts]
    streams = [s for p in parts for s in p["streams"]]
    result = aggregate(streams, " ".join(argv)) | verify.columns(streams)  # io.verify: every host's checks
    if op == "read":
        result["cached_before"] = sum(p["row"]["cached_before"] for p in parts) / len(parts)
    # The cell's series: the hosts' series summed by wall time.
    result["recorded_series"] = timeseries.combine([_as_recorded(p.get("timeseries")) for p in parts])
    series = series_of(cell, result)
    rows = [p["row"] for p in parts]
    per_host = by_host(hosts, parts)
    for row, host in zip(rows, hosts, strict=True):
        if per_host["hosts"][host].get("straggler"):
            row["flags"] = flags.add(row["flags"], [flags.STRAGGLER])
    target = arrays.Target.from_record(parts[0]["setup"])
    # Time-based: each part's read checked that it covered what its write moved (its own row's flags).
    result["expected_bytes"] = None if cell.runtime else cell.size * cell.streams * len(hosts)
    more = {"parts": rows, "parts_timeseries": [p.get("timeseries", {}) for p in parts], "hosts": per_host}
    record = measurement_record(cell, op, result, target, timeseries=series, **more)
    record["row"]["host"] = cell.host
    return record


def _as_recorded(ts: dict | None) -> dict | None:
    """A part's series as recorded bins (timeseries.raw) of its interval, to be summed with the others'."""
    if not ts:
        return None
    return timeseries.raw(ts["start"], ts["interval_s"], ts["bytes"], ts["ops"], ts["source"])


def by_host(hosts: list[str], parts: list[dict]) -> dict:
    """Per host (elbencho's first-done and last-done, IOR's stonewalling): when its first and its last stream
    finished (seconds from the cell's start, the earliest stream's start), its rate, and whether it straggles;
    for the cell the first and last host done, the tail between them and the stonewall figure."""
    found = {}
    for host, p in zip(hosts, parts, strict=True):
        streams = p["streams"]
        found[host] = {
            "start": min(s["start"] for s in streams),
            "end": max(s["end"] for s in streams),
            "first_stream_end": min(s["end"] for s in streams),
            "bytes": p["row"]["bytes"],
            "mb_s": p["row"]["mb_s"],
            "timeseries": p.get("timeseries") or {},
        }
    t0 = min(h["start"] for h in found.values())
    spread = max(h["start"] for h in found.values()) - t0
    wall = timeseries.stonewall(found)
    slow = timeseries.stragglers({h: v["mb_s"] * 1e6 for h, v in found.items()})
    table = {
        h: {
            "first_done_s": v["first_stream_end"] - t0,
            "last_done_s": v["end"] - t0,
            "bytes": v["bytes"],
            "mb_s": v["mb_s"],
            **({"straggler": slow[h]} if h in slow else {}),
        }
        for h, v in found.items()
    }
    return {k: v for k, v in wall.items() if k != "done_s"} | {"start_spread_s": spread, "hosts": table}
