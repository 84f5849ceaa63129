"""make bench-dag: how long Snakemake takes to plan a large campaign, and to find a finished one finished.

(1) `snakemake -n` on a synthetic campaign of 10,000 cells; (2) `snakemake --cores 2` on a finished campaign of
~500 jobs whose outputs are empty files made here. Nothing is attached, made or mounted: the workdir and the
scratch live in a tempdir that is removed at the end. Prints a table of medians over 3 runs and writes it to
docs/bench-dag.md. The targets are for planning, never asserted in tests.
"""

import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from fsbench.config import cells, validate  # noqa: E402

RUNS = 3
FILESYSTEMS = {"ext3": {"type": "ext3"}, "ext4": {"type": "ext4"}, "xfs": {"type": "xfs"}, "btrfs": {"type": "btrfs"}}
LARGE = {  # 4 arrays × (raw + 4 filesystems) × 5 block sizes × 2 patterns × 2 direct × 5 streams × 5 repeats
    "campaign": "large",
    "arrays": {f"a{i}": {"kind": "loop", "size": "2GiB"} for i in range(4)},
    "filesystems": FILESYSTEMS,
    "io": {
        "size": "64MiB",
        "block_sizes": ["4KiB", "64KiB", "1MiB", "4MiB", "16MiB"],
        "patterns": ["seq", "rand"],
        "direct": [False, True],
        "streams": [1, 2, 4, 8, 16],
        "repeats": 5,
    },
}
FINISHED = {  # 1 array × (raw + 4 filesystems) × 2 block sizes × 11 repeats
    "campaign": "finished",
    "arrays": {"demo": {"kind": "loop", "size": "1GiB"}},
    "filesystems": FILESYSTEMS,
    "io": {"size": "512MiB", "block_sizes": ["1MiB", "4MiB"], "repeats": 11},
}
SHAPES = {
    "large": "4 loop arrays × (raw + ext3, ext4, xfs, btrfs) × 5 block sizes × 2 patterns × 2 direct × 5 streams × "
    "5 repeats",
    "finished": "1 loop array × (raw + ext3, ext4, xfs, btrfs) × 2 block sizes × 11 repeats; every output an empty "
    "file with one mtime, the temp flag files absent (as after a real run), `-n` says nothing to be done",
}


def snakemake(tmp: Path, configfile: Path, *args: str) -> str:
    cmd = [str(REPO / ".venv/bin/snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(tmp / "work"), *args]
    done = subprocess.run([*cmd, "--configfile", str(configfile)], capture_output=True, text=True, cwd=tmp)
    if done.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout + done.stderr


def timed(tmp: Path, configfile: Path, *args: str) -> tuple[float, str]:
    """The median wall-clock seconds of RUNS runs, and what the last one printed."""
    times = []
    for i in range(RUNS):
        print(f"snakemake {' '.join(args)} on {configfile.stem}: run {i + 1}/{RUNS}", file=sys.stderr)
        started = time.perf_counter()
        out = snakemake(tmp, configfile, *args)
        times.append(time.perf_counter() - started)
    return statistics.median(times), out


def campaign(tmp: Path, config: dict) -> tuple[Path, int]:
    """The campaign file, with its scratch in the tempdir, and its number of cells."""
    config = config | {"scratch": str(tmp / "scratch")}
    path = tmp / f"{config['campaign']}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path, sum(1 for _ in cells(validate(config)))


def jobs(dry_run: str) -> int:
    return int(re.search(r"^total\s+(\d+)$", dry_run, re.M).group(1))


def finish(tmp: Path, configfile: Path) -> None:
    """Make every output of the DAG an empty file, all with one mtime; temp flag files stay absent."""
    summary = snakemake(tmp, configfile, "--summary")
    rows = [line.split("\t") for line in summary.splitlines() if "\t" in line]
    now = time.time()
    for name, _, _, _, status, _ in rows[1:]:  # rows[0] is the header: output_file, date, rule, log, status, plan
        if status != "removed temp file":
            path = tmp / "work" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
            os.utime(path, (now, now))
    dry_run = snakemake(tmp, configfile, "-n")
    if "Nothing to be done" not in dry_run:
        sys.exit(f"the finished campaign still has work to do:\n{dry_run}")


FLOOR = """rule all:
    input: expand("out/{i}.txt", i=range(10000))

rule one:
    output: "out/{i}.txt"
    shell: "touch {output}"
"""


def floor(tmp: Path) -> float:
    """What Snakemake alone takes to plan 10,000 jobs of one trivial rule here: the floor for one job per cell."""
    work = tmp / "floor"
    work.mkdir()
    (work / "Snakefile").write_text(FLOOR)
    times = []
    for i in range(RUNS):
        print(f"snakemake -n on a bare 10,000-job workflow: run {i + 1}/{RUNS}", file=sys.stderr)
        started = time.perf_counter()
        subprocess.run([str(REPO / ".venv/bin/snakemake"), "-n", "-d", str(work), "-s", str(work / "Snakefile")],
                       capture_output=True, check=True)  # fmt: skip
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    load = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="fsbench-dag-"))
    try:
        large, n_cells = campaign(tmp, LARGE)
        seconds, dry_run = timed(tmp, large, "-n")
        rows = [("dry run `snakemake -n`, large", f"{jobs(dry_run)} / {n_cells}", seconds, 30)]
        rows.append(("for scale: `snakemake -n`, a bare rule (`touch`), no fsbench", "10000 / –", floor(tmp), 30))
        done, n_cells = campaign(tmp, FINISHED)
        n_jobs = jobs(snakemake(tmp, done, "-n"))
        finish(tmp, done)
        seconds, _ = timed(tmp, done, "--cores", "2")
        rows.append(("no-op run `snakemake --cores 2`, finished", f"{n_jobs} / {n_cells}", seconds, 5))
    finally:
        shutil.rmtree(tmp)
    table = render(rows, load)
    print(table)
    (REPO / "docs" / "bench-dag.md").write_text(table)
    return 0


def render(rows, load: float) -> str:
    host = f"{platform.node()}, {platform.machine()}, {os.cpu_count()} CPUs, kernel {platform.release()}"
    lines = [
        "# DAG benchmark: planning a large campaign, finding a finished one finished",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {host}, load average {load:.2f} at the start. `make bench-dag`: "
        f"wall-clock seconds of the whole `.venv/bin/snakemake` process (start-up included), median of {RUNS} runs. "
        "No device is touched.",
        "",
        "| what | jobs / cells | seconds | target | met |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for what, size, seconds, target in rows:
        lines.append(f"| {what} | {size} | {seconds:.1f} | < {target} | {'yes' if seconds < target else 'no'} |")
    lines += ["", *(f"- {name}: {shape}" for name, shape in SHAPES.items())]
    lines += [
        "- for scale: Snakemake's own cost per planned job on this machine, with fsbench out of the picture; fsbench "
        "plans one job per cell and repeat (set-up, write and read in one), so a dry run cannot beat this line by "
        "much without giving up 'a change reruns only its cells'."
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
