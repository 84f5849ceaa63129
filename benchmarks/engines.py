"""make bench-engines: fsbench's python engine against fio's own reported figures, on a RAM-backed loop device.

Issue 12 asks the python engine to keep up with fio: ≥ 0.95 × fio's bandwidth in every cell at block sizes
≥ 64 KiB, and IOPS within 10 % of fio at 4 KiB random, iodepth 1 and 32. The reference is the figure fio itself
reports (`jobs[0].<op>.bw_bytes` / `.iops` of its JSON), never the wall-clock time of the fio process, which holds
its start-up (~0.3 s) and so flatters an in-process engine. fio runs with its defaults (psync, one reused buffer;
io_uring at depth 32), not through fsbench's fioengine (which sets refill_buffers and more).

The device: a campaign's loop array (steps.prepare_array: a 2 GiB image in /dev/shm, attached with direct I/O),
written once in full before anything is measured. O_DIRECT throughout, one stream. Writes include the flush:
python's bytes / seconds_durable against fio with end_fsync=1 (fio counts the fsync in its runtime).

This VM's speed drifts by 2× within minutes, so the two are paired in time: in each of ROUNDS rounds every
measurement runs python then fio (fio first in odd rounds); the ratio python/fio is taken per round and its
median over the rounds reported beside both medians. CPU s/GB: getrusage of this process around the python
engine's call (its set-up included: the random data pool, the offset list), RUSAGE_CHILDREN around fio's
(its process start-up included). CPU spent in the loop driver's kernel workers is in neither.

The engine's I/O loop is C (scripts/fsbench/engines/loops.c, one clock read per call and the histogram updated in
place); its set-up, timing brackets and flush are Python. Until it was (session 5, the same table on a quiet
machine), python/fio was 0.92 / 0.90 at 64 KiB write / read, 0.87 / 0.90 at 4 KiB QD1 randread / randwrite and
0.80 / 0.80 at QD32: Python's own work per call (loop, clock, histogram, a write's stamps: ~1-4 µs) against
fio's C; the tables that showed it ("where the time goes") are in this file's git history.

The campaign path (issue 30): the same comparison for what a campaign runs, a cell's write step and read step
(steps.write and steps.read, the functions scripts/write.py and read.py call) each in a process of its own, as
Snakemake starts them, on the same array; its figures are the records' rows. Beside the rates it shows how many
requests the device completed per call (/sys/block/<dev>/stat): how the kernel split each call, which depends on
where the buffer's pages lie (see docs/bench-engines.md).

io.verify's cost (issue 41): the python engine's write and read of the same bytes with and without io.verify, on
the same device, paired in each round (which goes first alternates), called directly: the figures, the verified
over the plain figure per round (median, range), the plain figure's own spread over the rounds beside it (the
check must not move the figure further than the machine moves it), and the check's CPU per GB (verify_seconds:
the checks run on the stream's own CPU, outside its calls) beside the whole CPU s/GB of each.

Prints the tables and writes them to docs/bench-engines.md. About 5 minutes. SMOKE=1: every row once on a
64 MiB device, the tables printed and nothing written (under a minute). Root: it attaches a loop device
under a tempdir in /dev/shm and releases it (and removes the image) at the end, also on failure.
"""

import contextlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from vm import memory_kept  # noqa: E402  (benchmarks/vm.py)

from fsbench.campaign.cells import LOCAL, CellSpec, array_dir  # noqa: E402
from fsbench.campaign.cells import Cell as CampaignCell  # noqa: E402
from fsbench.campaign.config import validate  # noqa: E402
from fsbench.campaign.plan import Plan  # noqa: E402
from fsbench.engines import table, verify  # noqa: E402
from fsbench.engines.job import Job, Stream  # noqa: E402
from fsbench.measurement import steps  # noqa: E402
from fsbench.storage import devices  # noqa: E402
from fsbench.toolkit.records import read_json, write_json  # noqa: E402
from fsbench.toolkit.sizes import format_size  # noqa: E402
from fsbench.toolkit.system import exit_on_sigterm  # noqa: E402

KiB, MiB, GiB = 2**10, 2**20, 2**30
# SMOKE=1: every row once on a tiny device, the table printed, no doc written (a test runs it: does it still run?).
SMOKE = os.environ.get("SMOKE") == "1"
SIZE = 64 * MiB if SMOKE else 2 * GiB  # per throughput measurement, and the device: 2 GiB of the VM's 24 GiB of RAM
BLOCK_SIZES = [64 * KiB, MiB, 4 * MiB]
IOPS_BS = 4 * KiB
# per IOPS measurement, by depth: each lasts a second or more
IOPS_SIZE = {1: 16 * MiB, 32: 32 * MiB} if SMOKE else {1: 256 * MiB, 32: GiB}
DEPTHS = (1, 32)
# even: each engine goes first in half the rounds (at 4 KiB QD1 the second turn ran faster, session 10)
ROUNDS = 1 if SMOKE else 6
BW_GOAL = 0.95  # python/fio at least this, bs ≥ 64 KiB
IOPS_GOAL = 0.10  # |python/fio - 1| at most this, 4 KiB random


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cpu_self() -> float:
    """User + system CPU seconds of this process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@dataclass(frozen=True)
class Figure:
    """One run: `bytes` in `ops` I/O calls over `seconds`, and the CPU seconds getrusage gave it (module doc)."""

    bytes: int
    ops: int
    seconds: float
    cpu: float

    @property
    def rate(self) -> float:  # bytes/s
        return self.bytes / self.seconds

    @property
    def iops(self) -> float:
        return self.ops / self.seconds


# --- the two engines as judged -------------------------------------------------------------------


# fio bound to the CPU the engine binds its one stream to (toolkit.system.pin_to_cpu: the first allowed), so that
# both run alike: unbound, a process's thread wakes on either core after each call and loses up to 15 %.
FIO_CPU = min(os.sched_getaffinity(0))


def fio_argv(dev: str, rw: str, bs, size: int, depth: int = 1) -> list[str]:
    argv = ["fio", "--name=ref", f"--filename={dev}", f"--rw={rw}", f"--bs={bs}", f"--size={size}", "--direct=1"]
    argv.append(f"--cpus_allowed={FIO_CPU}")
    argv += ["--ioengine=psync"] if depth == 1 else ["--ioengine=io_uring", f"--iodepth={depth}"]
    if "write" in rw:
        argv.append("--end_fsync=1")
    return argv + ["--output-format=json"]


def fio(dev: str, rw: str, bs: int, size: int, depth: int = 1) -> Figure:
    """fio's own figure: bw_bytes and iops of its JSON (the time is io_bytes / bw_bytes, start-up excluded)."""
    argv = fio_argv(dev, rw, bs, size, depth)
    before = cpu_children()
    proc = subprocess.run(argv, capture_output=True, text=True)
    cpu = cpu_children() - before
    if proc.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    job = json.loads(proc.stdout[proc.stdout.index("{") :])["jobs"][0]
    op = job["write" if "write" in rw else "read"]
    if op["io_bytes"] != size:
        raise RuntimeError(f"{' '.join(argv)} moved {op['io_bytes']} of {size} bytes")
    return Figure(op["io_bytes"], op["total_ios"], op["io_bytes"] / op["bw_bytes"], cpu)


def python(op: str, job: Job) -> Figure:
    """The python engine as fsbench runs it: bytes (and I/O calls) over seconds_durable."""
    before = cpu_self()
    result = table.run("python", op, job)
    cpu = cpu_self() - before
    if result["bytes"] != job.size:
        raise RuntimeError(f"python {op} moved {result['bytes']} of {job.size} bytes")
    return Figure(result["bytes"], result["ops"], result["seconds_durable"], cpu)


def seq_job(dev: str, bs: int) -> Job:
    return Job((Stream(dev, 0, True),), SIZE, bs, direct=True)


def rand_job(dev: str, depth: int, size: int) -> Job:
    return Job((Stream(dev, 0, True),), size, IOPS_BS, pattern="rand", direct=True, iodepth=depth)


@dataclass(frozen=True)
class Cell:
    label: str
    op: str  # write | read
    job: Job
    fio_rw: str

    @property
    def iops(self) -> bool:
        return self.job.pattern == "rand"


def cells(dev: str) -> list[Cell]:
    found = []
    for bs in BLOCK_SIZES:
        for op in ("write", "read"):
            found.append(Cell(f"{op}, {format_size(bs)}, sequential, QD1", op, seq_job(dev, bs), op))
    for depth in DEPTHS:
        for op in ("read", "write"):
            how = "psync" if depth == 1 else "io_uring"
            label = f"rand{op}, {format_size(IOPS_BS)}, QD{depth} (fio {how})"
            found.append(Cell(label, op, rand_job(dev, depth, IOPS_SIZE[depth]), f"rand{op}"))
    return found


def judged(dev: str, chosen: list[Cell]) -> dict:
    """{cell: [(python, fio) per round]}: python then fio in even rounds, fio then python in odd ones."""
    figures = {}
    for rnd in range(ROUNDS):
        for cell in chosen:
            job = cell.job
            run = {
                "python": lambda c=cell: python(c.op, c.job),
                "fio": lambda c=cell, j=job: fio(dev, c.fio_rw, j.block_size, j.size, j.iodepth),
            }
            order = ("python", "fio") if rnd % 2 == 0 else ("fio", "python")
            got = {name: run[name]() for name in order}
            figures.setdefault(cell, []).append((got["python"], got["fio"]))
        log(f"judged: round {rnd + 1}/{ROUNDS} done")
    return figures


# fio's own process waits for its job waking every 10 ms (its backend's usleep(10000) loop: ~100 wake-ups a second,
# counted on this VM). On a VM whose idle CPU halts, such a neighbour alone lifts a 4 KiB QD1 rate by ~8 %: a bare C
# pread loop ran at 0.92 of fio, and at 0.98-1.00 under a parent waking so (docs/bench-engines.md). Snakemake,
# the engine's parent in a campaign, wakes about once a second. Here both engines run beside one such process.
WAKER = [sys.executable, "-c", "import time\nwhile True:\n    time.sleep(0.01)"]


@contextlib.contextmanager
def waker():
    proc = subprocess.Popen(WAKER)
    try:
        yield
    finally:
        proc.kill()
        proc.wait()


def qd1_cells(dev: str) -> list[Cell]:
    return [c for c in cells(dev) if c.iops and c.job.iodepth == 1]


# --- the campaign path ---------------------------------------------------------------------------
# What a campaign runs (issue 30): the write step (steps.write, the function scripts/write.py calls) in a
# process of its own, as Snakemake starts one per job, on the campaign's own loop array; then the read step
# (steps.read) in another. Its figures are the record's: the row's bytes over seconds_durable (writes) or
# seconds (reads), its cpu_s_per_gb. fio writes and reads the same bytes right after (before, in odd rounds).

CAMPAIGN, ARRAY = "bench-engines", "ram"
WHY = "## Why"  # docs/bench-engines.md's hand-written part begins at this heading


@dataclass(frozen=True)
class Row:
    """A campaign-path cell: its write and the read of what it wrote (raw, O_DIRECT, one stream, QD1)."""

    label: str
    pattern: str  # seq | rand
    block_size: int
    size: int

    @property
    def iops(self) -> bool:
        return self.pattern == "rand"


def campaign_rows() -> list[Row]:
    rows = [Row(f"{format_size(IOPS_BS)}, random, QD1", "rand", IOPS_BS, IOPS_SIZE[1])]
    return rows + [Row(f"{format_size(bs)}, sequential, QD1", "seq", bs, SIZE) for bs in BLOCK_SIZES]


def campaign(scratch: Path, row: Row | None = None) -> dict:
    """The campaign a row is a cell of, validated: one loop array of SIZE in /dev/shm, raw, O_DIRECT reads."""
    bs, pattern, size = (row.block_size, row.pattern, row.size) if row else (MiB, "seq", SIZE)
    io = {"engine": "python", "size": size, "block_sizes": [bs], "patterns": [pattern], "direct": [True]}
    return validate(
        {
            "campaign": CAMPAIGN,
            "scratch": str(scratch),
            "arrays": {ARRAY: {"kind": "loop", "size": SIZE}},
            "raw": True,
            "filesystems": {},
            "io": io | {"repeats": 1, "cache": "direct"},
        }
    )


def cell_params(scratch: Path, row: Row) -> dict:
    """The cell's params as the rules give them to its steps (plan.Plan.cell_spec)."""
    test = CampaignCell(LOCAL, ARRAY, "raw", row.pattern, row.block_size, True, 1, 1).test
    return Plan(campaign(scratch, row)).cell_spec(LOCAL, ARRAY, "raw", test, 1)


def step_here(op: str, params: str, before: str, out: str) -> int:
    """The child: the `op` step of the cell in `params` after the record `before`, its record written to `out`."""
    cell = CellSpec.from_params(read_json(params))
    step = steps.write if op == "write" else steps.read
    write_json(out, step(cell, read_json(before), cell.workdir))
    return 0


def requests(dev: str, op: str) -> int:
    """Requests the device has completed so far (/sys/block/<dev>/stat): reads, or writes."""
    fields = Path(f"/sys/block/{Path(dev).name}/stat").read_text().split()
    return int(fields[0 if op == "read" else 4])


def step_process(op: str, params: Path, before: Path, out: Path) -> Figure:
    """The step in a process of its own, as Snakemake runs it; the figure and CPU its record gives."""
    argv = [sys.executable, __file__, "step", op, str(params), str(before), str(out)]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"the {op} step failed ({proc.returncode}): {proc.stderr.strip()[-3000:]}")
    row = read_json(out)["row"]
    seconds = row["seconds_durable"] if op == "write" else row["seconds"]
    return Figure(row["bytes"], row["ops"], seconds, row["cpu_s_per_gb"] * row["bytes"] / 1e9)


def paired(dev: str, files: Path, params: Path, row: Row, fio_first: bool) -> dict:
    """One round of a row: {(engine, op): (figure, the device's requests per call)}; the cell's write and read
    steps, and fio's write and read of the same bytes."""
    rw = "rand" if row.iops else ""
    write, before = files / "write.json", files / "prepare_array.json"
    runs = {
        "python": [
            ("write", lambda: step_process("write", params, before, write)),
            ("read", lambda: step_process("read", params, write, files / "read.json")),
        ],
        "fio": [
            ("write", lambda: fio(dev, rw + "write", row.block_size, row.size)),
            ("read", lambda: fio(dev, rw + "read", row.block_size, row.size)),
        ],
    }
    got = {}
    for engine in ("fio", "python") if fio_first else ("python", "fio"):
        for op, run in runs[engine]:
            count = requests(dev, op)
            figure = run()
            got[engine, op] = (figure, (requests(dev, op) - count) / (row.size // row.block_size))
    return got


def through_campaign(scratch: Path, array_record: dict, dev: str) -> dict:
    """{(row, op): [(python, fio, python's requests per call, fio's) per round]}, op write and read."""
    files = scratch / "steps"
    files.mkdir()
    write_json(files / "prepare_array.json", array_record)
    figures = {}
    for rnd in range(ROUNDS):
        for row in campaign_rows():
            params = files / "cell.json"
            write_json(params, cell_params(scratch, row))
            got = paired(dev, files, params, row, fio_first=rnd % 2 == 1)
            for op in ("write", "read"):
                (p, p_req), (f, f_req) = got["python", op], got["fio", op]
                figures.setdefault((row, op), []).append((p, f, p_req, f_req))
        log(f"campaign path: round {rnd + 1}/{ROUNDS} done")
    return figures


def cpu_per_gb(figure: Figure) -> float:
    return figure.cpu / (figure.bytes / 1e9)


def spread(values: list[float]) -> float:
    """(highest - lowest) / median: how far a figure moved over the rounds."""
    return (max(values) - min(values)) / med(values)


def render_campaign(figures: dict) -> str:
    lines = [
        "## The campaign path",
        "",
        "What a campaign runs (`benchmarks/engines.py`'s `through_campaign`): per row a cell of a campaign on the "
        f"same loop array (raw, O_DIRECT, one stream, QD1, cache: direct; {format_size(SIZE)} sequential, "
        f"{format_size(IOPS_SIZE[1])} random), its write step (`steps.write`, the function scripts/write.py calls) "
        "and then its read step (`steps.read`), each in a Python process of its own as Snakemake starts them; the "
        "figure is the record's row: bytes over seconds_durable (writes, the flush included) or seconds (reads). "
        "fio (the command above, `--rw=randwrite|randread` for the random row) writes and reads the same bytes "
        f"right after (first in odd rounds), {ROUNDS} rounds. Spread: (highest - lowest) / median of an engine's "
        "figures over the rounds. Requests per call: what the device completed (/sys/block/<dev>/stat) over the "
        "calls made. Goal (issue 30): python/fio ≥ 0.95 in every row, with less spread than fio's.",
        "",
        "| campaign path | fio | python (step) | python/fio | range | spread fio | spread python | met | "
        "requests per call fio | python | python CPU s/GB | fio CPU s/GB |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for (row, op), runs in figures.items():
        value = (lambda f: f.iops) if row.iops else (lambda f: f.rate)
        ratios = [value(p) / value(f) for p, f, _, _ in runs]
        ours, theirs = [value(p) for p, *_ in runs], [value(f) for _, f, *_ in runs]
        met = med(ratios) >= BW_GOAL and spread(ours) < spread(theirs)
        lines.append(
            f"| {op}, {row.label} | {rate_text(med(theirs), row.iops)} | {rate_text(med(ours), row.iops)} | "
            f"{med(ratios):.2f} | {min(ratios):.2f}–{max(ratios):.2f} | {spread(theirs):.2f} | {spread(ours):.2f} "
            f"| {'met' if met else 'not met'} | {med(r[3] for r in runs):.2f} | {med(r[2] for r in runs):.2f} | "
            f"{med(cpu_per_gb(p) for p, *_ in runs):.2f} | {med(cpu_per_gb(f) for _, f, *_ in runs):.2f} |"
        )
    return "\n".join(lines) + "\n"


# --- io.verify's cost --------------------------------------------------------------------------

VERIFY_DEPTH32 = 32


def verify_cells(dev: str) -> list[Cell]:
    """What io.verify is measured on: sequential 64 KiB and 1 MiB, 4 KiB random at QD1 and QD32."""
    seq = [(f"{format_size(bs)}, sequential, QD1", seq_job(dev, bs)) for bs in (64 * KiB, MiB)]
    rand = [(f"{format_size(IOPS_BS)}, random, QD{d}", rand_job(dev, d, IOPS_SIZE[d])) for d in DEPTHS]
    return [Cell(f"{op}, {label}", op, job, "") for label, job in seq + rand for op in ("write", "read")]


def verified_run(op: str, job: Job) -> tuple[Figure, float]:
    """python(op, job), and the check's own seconds (a read's verify_seconds; 0 for a write, which stamps)."""
    before = cpu_self()
    result = table.run("python", op, job)
    cpu = cpu_self() - before
    if result["bytes"] != job.size or result.get("bad_blocks", 0):
        raise RuntimeError(
            f"python {op} (verify: {bool(job.verify)}) moved {result['bytes']} of {job.size} bytes, "
            f"{result.get('bad_blocks', 0)} bad blocks"
        )
    seconds = result["seconds_durable"] if op == "write" else result["seconds"]
    return Figure(result["bytes"], result["ops"], seconds, cpu), result.get("verify_seconds", 0.0)


def with_and_without_verify(dev: str) -> dict:
    """{cell: [(plain, verified, the check's seconds) per round]}: each cell's write then read (a verified read
    reads a verified write), plain first in even rounds, verified first in odd ones."""
    figures = {}
    for rnd in range(ROUNDS):
        for write, read in zip(*[iter(verify_cells(dev))] * 2, strict=True):
            signed, mark = verify.signatures(rnd, 1, 1), verify.mark(CAMPAIGN, write.label)  # the read's: the write's
            runs = {}
            for checked in (False, True) if rnd % 2 == 0 else (True, False):
                for cell in (write, read):
                    job = replace(cell.job, verify=signed, mark=mark) if checked else cell.job
                    runs[cell, checked] = verified_run(cell.op, job)
            for cell in (write, read):
                (plain, _), (checked, check_s) = runs[cell, False], runs[cell, True]
                figures.setdefault(cell, []).append((plain, checked, check_s))
        log(f"io.verify: round {rnd + 1}/{ROUNDS} done")
    return figures


ZRAM_CONTROL = Path("/sys/class/zram-control")


@contextlib.contextmanager
def zram_device(size: int):
    """A zram device of this benchmark's own (hot_add: a new number, never one the machine had), `size` bytes,
    removed after; None where the kernel has no zram. zram copies a block on the CPU that asks for it, within the
    call, as a device writing by DMA leaves no other CPU holding the buffer's lines: the loop device's worker
    copies on the other CPU (docs/bench-engines.md, io.verify)."""
    if not (ZRAM_CONTROL / "hot_add").exists():
        yield None
        return
    n = int((ZRAM_CONTROL / "hot_add").read_text())
    block = Path(f"/sys/block/zram{n}")
    try:
        (block / "disksize").write_text(str(size))
        yield f"/dev/zram{n}"
    finally:
        (block / "reset").write_text("1")
        (ZRAM_CONTROL / "hot_remove").write_text(str(n))


def render_verify(figures: dict, zram: dict | None) -> str:
    text = _verify_table("## io.verify: what checking costs", figures)
    if zram is None:
        return text + "\nThis kernel has no zram: the table on a device that copies on the reading CPU is not made.\n"
    return (
        text
        + "\n"
        + _verify_table(
            "## io.verify on a device that copies on the reading CPU (zram)",
            zram,
            f"The same rows on a {format_size(2 * SIZE)} zram device the benchmark makes (`hot_add`) and removes, "
            "written once in full first: zram copies each block in the call, on the CPU that asks (random data: "
            "stored as is), where the loop device's worker copies it on the other CPU.",
        )
    )


def _verify_table(title: str, figures: dict, device: str = "") -> str:
    lines = [
        title,
        "",
        (device + " " if device else "")
        + "The python engine called directly on the same device (`table.run`, O_DIRECT, one stream), each row's write "
        "and then read of the same bytes without and with io.verify (the verified read checks the verified write), "
        f"paired in each of {ROUNDS} rounds (plain first in even rounds, verified first in odd). Verified/plain: the "
        "median of the per-round ratios (range). Spread: (highest - lowest) / median of the plain figure over the "
        "rounds, the machine's own; goal (issue 41): the ratio within 1 ± that spread. Check CPU s/GB: the checks' "
        "own time (`verify_seconds`, on the stream's bound CPU, outside its calls) per 10^9 bytes read; a write "
        "stamps only its offset, as a plain one (the rest of the header is in the pool before the start line). "
        "At QD1 a read's figure leaves the checks' time out (the device waits meanwhile); at QD32 the checks overlap "
        "what is in flight and stay in it.",
        "",
        "| io.verify | plain | verified | verified/plain | range | spread (plain) | within | check CPU s/GB | "
        "CPU s/GB plain | verified |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    for cell, runs in figures.items():
        value = (lambda f: f.iops) if cell.iops else (lambda f: f.rate)
        ratios = [value(v) / value(p) for p, v, _ in runs]
        plain = [value(p) for p, _, _ in runs]
        within = abs(med(ratios) - 1) <= spread(plain)
        check = f"{med(s / (v.bytes / 1e9) for _, v, s in runs):.3f}" if cell.op == "read" else "–"
        checked = rate_text(med(value(v) for _, v, _ in runs), cell.iops)
        lines.append(
            f"| {cell.label} | {rate_text(med(plain), cell.iops)} | {checked} "
            f"| {med(ratios):.2f} | {min(ratios):.2f}–{max(ratios):.2f} | {spread(plain):.2f} | "
            f"{'yes' if within else 'no'} | {check} | "
            f"{med(cpu_per_gb(p) for p, _, _ in runs):.2f} | {med(cpu_per_gb(v) for _, v, _ in runs):.2f} |"
        )
    return "\n".join(lines) + "\n"


# --- report --------------------------------------------------------------------------------------


def med(values) -> float:
    return statistics.median(list(values))


def rate_text(value: float, iops: bool) -> str:
    return f"{value / 1e3:.1f}k IOPS" if iops else f"{value / 1e6:.0f} MB/s"


def render_judged(figures: dict, load: float, load_end: float, started: datetime, memory: str) -> str:
    host = f"{platform.node()}, {platform.machine()}, {os.cpu_count()} CPUs, kernel {platform.release()}"
    fio_seq = " ".join(fio_argv("<dev>", "write|read", "<bs>", SIZE)).replace(" --end_fsync=1", " [--end_fsync=1]")
    lines = [
        "# Engine benchmark: fsbench's python engine against fio's own figures",
        "",
        f"{started:%Y-%m-%d %H:%M} UTC on {host}, load average {load:.2f} at the start and {load_end:.2f} at the end. "
        f"`make bench-engines`: a {format_size(SIZE)} loop device over an image in /dev/shm (attached with direct "
        f"I/O), written once in full first; O_DIRECT, one stream. The reference is fio's own figure "
        f"(`jobs[0].<op>.bw_bytes` / `.iops` of its JSON, its start-up excluded) with fio's defaults, bound to "
        f"the CPU the engine's stream is bound to: `{fio_seq}` "
        f"(sequential, {format_size(SIZE)} per run, writes with end_fsync); `--rw=randread|randwrite --bs=4096`, "
        f"psync at QD1 ({format_size(IOPS_SIZE[1])} per run) and `--ioengine=io_uring --iodepth=32` at QD32 "
        f'({format_size(IOPS_SIZE[32])} per run). python: `table.run("python", op, Job(...))`, bytes (or I/O '
        "calls) over seconds_durable: a write's figure includes its fsync, as fio's with end_fsync=1. Paired in "
        f"time: in each of {ROUNDS} rounds every row runs python then fio (fio first in odd rounds); python/fio is "
        "the median of the per-round ratios (range: lowest–highest round), beside the medians of both figures. "
        f"Goal (issue 12): python/fio ≥ {BW_GOAL} at bs ≥ 64 KiB, within {IOPS_GOAL:.0%} at 4 KiB random. CPU "
        "s/GB = user + system CPU per 10^9 bytes: getrusage of this process around the python call (its set-up "
        "included: data pool, offset list), RUSAGE_CHILDREN around fio (its start-up included); the loop driver's "
        f"kernel workers are in neither. Memory: {memory}.",
        "",
    ]
    return "\n".join(lines + judged_table(figures)) + "\n"


def render_woken(figures: dict) -> str:
    lines = [
        "## 4 KiB QD1 beside a process that wakes every 10 ms",
        "",
        "The QD1 rows above again, both engines alike beside one more process, unbound, that sleeps 10 ms at a "
        "time (a Python loop of `time.sleep(0.01)`), as fio's own backend process does while its job runs. This "
        "VM's idle CPU halts (cpuidle haltpoll, no polling); a neighbour that wakes now and then changes how fast "
        "the I/O's wake-ups come back, and it is part of fio's figure above, not of the engine's (see Why, below).",
        "",
    ]
    return "\n".join(lines + judged_table(figures)) + "\n"


def judged_table(figures: dict) -> list[str]:
    lines = [
        "| measurement | fio (reference) | python | python/fio | range | goal | met | python CPU s/GB | fio CPU s/GB |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: |",
    ]
    for cell, pairs in figures.items():
        iops = cell.iops
        value = (lambda f: f.iops) if iops else (lambda f: f.rate)
        ratios = [value(p) / value(f) for p, f in pairs]
        ratio = med(ratios)
        if iops:
            goal, met = f"within {IOPS_GOAL:.0%}", abs(ratio - 1) <= IOPS_GOAL
        else:
            goal, met = f"≥ {BW_GOAL}", ratio >= BW_GOAL
        lines.append(
            f"| {cell.label} | {rate_text(med(value(f) for _, f in pairs), iops)} | "
            f"{rate_text(med(value(p) for p, _ in pairs), iops)} | {ratio:.2f} | {min(ratios):.2f}–{max(ratios):.2f} "
            f"| {goal} | {'met' if met else 'not met'} | {med(p.cpu / (p.bytes / 1e9) for p, _ in pairs):.2f} | "
            f"{med(f.cpu / (f.bytes / 1e9) for _, f in pairs):.2f} |"
        )
    return lines


def main() -> int:
    if os.geteuid() != 0:
        print("bench-engines attaches a loop device: run it as root", file=sys.stderr)
        return 1
    if not shutil.which("fio"):
        print("bench-engines needs fio on PATH", file=sys.stderr)
        return 1
    started, load = datetime.now(UTC), os.getloadavg()[0]
    with memory_kept() as memory:
        log(memory)
        scratch = Path(tempfile.mkdtemp(prefix="fsbench-bench-engines-", dir="/dev/shm"))
        try:
            # The campaign's own array (prepare_array, as its rule runs it): both paths measure on its device.
            spec = campaign(scratch)["arrays"][ARRAY]
            record = steps.prepare_array(spec, ARRAY, LOCAL, array_dir(str(scratch), CAMPAIGN, ARRAY))
            dev = record["state"]["devices"][0]
            log(f"{dev} over {scratch}: written once in full before measuring")
            python("write", seq_job(dev, 4 * MiB))  # allocate every page of the image, warm fio's files
            fio(dev, "read", MiB, SIZE)
            figures = judged(dev, cells(dev))
            with waker():
                woken = judged(dev, qd1_cells(dev))
            through = through_campaign(scratch, record, dev)
            checked = with_and_without_verify(dev)
            with zram_device(2 * SIZE) as zram:
                if zram:
                    log(f"{zram}: a zram device of {format_size(2 * SIZE)}, written once in full before measuring")
                    python("write", seq_job(zram, 4 * MiB))
                on_zram = with_and_without_verify(zram) if zram else None
        finally:
            devices.release(scratch)
            shutil.rmtree(scratch, ignore_errors=True)
    end_load = os.getloadavg()[0]
    text = render_judged(figures, load, end_load, started, memory) + "\n" + render_woken(woken)
    text += "\n" + render_campaign(through) + "\n" + render_verify(checked, on_zram)
    print(text)
    if SMOKE:
        log("SMOKE=1: nothing written")
        return 0
    out = REPO / "docs" / "bench-engines.md"
    before = out.read_text() if out.exists() else ""
    # What the tables are explained by is written by hand, below them: kept as it is.
    out.write_text(text + (before[before.index(WHY) - 1 :] if WHY in before else ""))
    log(f"written to {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["step"]:  # one step of a campaign-path cell, in a process of its own
        sys.exit(step_here(*sys.argv[2:]))
    exit_on_sigterm()  # a killed benchmark releases its devices
    t0 = time.time()
    code = main()
    log(f"took {time.time() - t0:.0f} s")
    sys.exit(code)
