"""Shared fixtures: a private scratch folder per test that is always released, and a campaign runner."""

import fcntl
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager, suppress
from pathlib import Path

import pandas as pd
import pytest
import yaml
from _pytest.nodeid import coerce_node_id

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

import slowdev  # noqa: E402

from fsbench.measurement.rows import COLUMNS as MEASUREMENT_COLUMNS  # noqa: E402
from fsbench.storage import devices  # noqa: E402

SNAKEMAKE = REPO / ".venv" / "bin" / "snakemake"
SCRATCH_ROOT = Path("/var/tmp/fsbench-test")

# What some tests need from the machine. A test without it skips, saying why; a capability named in
# FSBENCH_REQUIRE (comma-separated, or `all`) fails it instead, so CI on a machine that has it cannot pass without.
# peers: IOR's source tarball in ../shared/peers; thp: transparent huge pages not off; dev_full: /dev/full;
# filesystems: every filesystem of fsbench.storage.filesystems (its mkfs here, its kernel support).
CAPABILITIES = ("root", "slurm", "ceph", "postgres", "chromium", "throttle", "io_uring", "peers", "thp", "dev_full")
CAPABILITIES += ("filesystems",)
PEERS_TARBALL = REPO.parent / "shared" / "peers" / "ior-5fcf0ba.tar.gz"
# What the kernel has that makes a test's subject unobservable (not something a machine lacks): a test that cannot
# run because of one skips naming it, whatever FSBENCH_REQUIRE says. Listed in README.md (Tests).
KERNEL_CONDITIONS = {
    "md": "this kernel has md, so fsbench's refusal of md arrays cannot be seen here",
    "filesystem": "this kernel lacks a filesystem of fsbench's table (fsbench.storage.filesystems), and no module "
    "can bring it",
}


def required() -> set[str]:
    names = {n.strip() for n in os.environ.get("FSBENCH_REQUIRE", "").split(",") if n.strip()}
    if "all" in names:
        return set(CAPABILITIES)
    if unknown := names - set(CAPABILITIES):
        raise pytest.UsageError(
            f"FSBENCH_REQUIRE={os.environ['FSBENCH_REQUIRE']!r}: unknown {sorted(unknown)}; "
            f"allowed: {', '.join(CAPABILITIES)} or all"
        )
    return names


def pytest_configure(config):
    required()  # a misspelt name stops the run before any test
    config.addinivalue_line("markers", "needs(capability): the test needs it (see CAPABILITIES)")


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    """make test runs two workers (pytest-xdist, --dist loadgroup). Tests that start the machine's one local Slurm
    form one group, which one worker runs in turn (they would only wait on its lock); tests whose figures hang on
    a throttle's timing form another, one at a time on a worker of their own. The rest go wherever a worker is
    free: each test has its own scratch folder, loop devices, mounts and servers."""
    for item in items:
        if item.path.name.startswith("test_slurm") or item.name == "test_bench_cluster_runs":
            item.add_marker(pytest.mark.xdist_group("slurm"))
        elif any("throttle" in m.args for m in item.iter_markers("needs")):
            item.add_marker(pytest.mark.xdist_group("throttle"))
    result = yield  # xdist's own hook names each item's group
    # pytest-xdist 3.8 writes the group into `item._nodeid` ("<id>@slurm"), which pytest 9 no longer reads (it
    # keeps the id in `_id`): without this no test is grouped (tests/test_xdist_groups.py).
    for item in items:
        named = getattr(item, "_nodeid", None)
        if isinstance(named, str) and named != item.nodeid:
            item._id = coerce_node_id(named)
    return result


def missing(capability: str, reason: str):
    """`capability` is not here (`reason`): fail the test if FSBENCH_REQUIRE names it, else skip it."""
    assert capability in CAPABILITIES, capability
    if capability in required():
        pytest.fail(f"{capability} is required (FSBENCH_REQUIRE) but missing: {reason}", pytrace=False)
    pytest.skip(f"{capability}: {reason}")


def kernel_condition(name: str, which: str = ""):
    """Skip: the kernel has (or lacks) `name` (KERNEL_CONDITIONS), which hides what the test looks at."""
    pytest.skip(f"kernel condition {name}: {KERNEL_CONDITIONS[name]}{f' ({which})' if which else ''}")


def why_missing(capability: str) -> str | None:
    """Why `capability` is not here, None when it is (the checks that need no test to run first)."""
    if capability in ("root", "throttle") and os.geteuid() != 0:
        return "loop devices, mkfs, mount and cgroups need root"
    if capability == "throttle":
        return slow_unavailable()
    if capability == "io_uring":
        from fsbench.engines.uring import why_unavailable

        return why_unavailable()
    if capability == "peers" and not PEERS_TARBALL.exists():
        return f"no {PEERS_TARBALL} beside the repository to build IOR and mdtest from"
    if capability == "thp" and thp_off():
        return "transparent huge pages are off (/sys/kernel/mm/transparent_hugepage/enabled): buffers are 4 KiB pages"
    if capability == "dev_full" and not os.path.exists("/dev/full"):
        return "no /dev/full"
    return None


def thp_off() -> bool:
    try:
        return "[never]" in Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return True


def pytest_runtest_setup(item):
    for mark in item.iter_markers("needs"):
        for capability in mark.args:
            if reason := why_missing(capability):
                missing(capability, reason)


needs_root = pytest.mark.needs("root")


def held(scratch) -> list[str]:
    """Mounts and loop devices that still belong to `scratch`."""
    root = str(Path(scratch).resolve()) + "/"
    found = [m.mountpoint for m in devices.mounts() if (m.mountpoint + "/").startswith(root)]
    return found + [d for d, b in devices.loop_backing().items() if b.startswith(root)]


@contextmanager
def private_scratch(root: Path = SCRATCH_ROOT):
    """A fresh scratch folder; whatever is left under it is released, and that release must succeed."""
    path = root / uuid.uuid4().hex[:12]
    path.mkdir(parents=True)
    try:
        yield path
    finally:
        devices.release(path)
        leaked = held(path)
        subprocess.run(["rm", "-rf", str(path)], check=False)
    assert not leaked, f"still attached or mounted after release: {leaked}"


@pytest.fixture
def scratch():
    with private_scratch() as path:
        yield path


# Under /dev/shm: loop images in RAM, for the tests whose figures should come from the engine, not a disk.
RAM_ROOT = Path("/dev/shm/fsbench-test")


@pytest.fixture
def ram_scratch():
    with private_scratch(RAM_ROOT) as path:
        yield path


def run_campaign(
    workdir: Path, config: dict, *args: str, check: bool = True, env: dict | None = None, checkout: Path = REPO
) -> subprocess.CompletedProcess:
    """Run the workflow (of `checkout`) on `config` in `workdir`, as a user would with --configfile."""
    workdir.mkdir(parents=True, exist_ok=True)
    cfg = workdir / "campaign.yaml"
    cfg.write_text(yaml.safe_dump(config))
    argv = [str(SNAKEMAKE), "-s", str(checkout / "Snakefile"), "-d", str(workdir), "--cores", "2", *args]
    proc = subprocess.run(
        [*argv, "--configfile", str(cfg)], capture_output=True, text=True, timeout=1200, env=os.environ | (env or {})
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
            + failed_logs(workdir, proc.stderr)
        )
    return proc


def failed_logs(workdir: Path, stderr: str, lines: int = 30) -> str:
    """The last lines of each log Snakemake names for a failed job (a Slurm job's log, a rule's log): on CI
    the run's folder is gone once the run ends, and what failed is only in there."""
    named = dict.fromkeys(n for found in re.findall(r"log: (.+?) \(check log file", stderr) for n in found.split(", "))
    out = []
    for name in named:
        path = workdir / name  # relative names are the workdir's; an absolute one stays as it is
        text = path.read_text(errors="replace").splitlines()[-lines:] if path.is_file() else ["(no such file)"]
        out.append(f"\n--- {name} (last {lines} lines) ---\n" + "\n".join(text))
    return "".join(out)


MiB = 2**20

# A tiny io500: settings of the IO500 tests (their campaigns and their stored phases).
IO500_SMALL = {
    "processes": 2,
    "ior-easy": {"transferSize": "64KiB", "blockSize": "1MiB"},
    "ior-hard": {"segmentCount": 10},
    "mdtest-easy": {"n": 20},
    "mdtest-hard": {"n": 102},  # file.mdtest.<rank>.101 matches find's *01*: io500 finds one per rank
}


# Measurements made up for the statistics, comparison and plot tests.
def row(target="raw", op="write", mb_s=100.0, rep=1, block_size=MiB, durable=None, array="demo", **over) -> dict:
    """One row of measurements.csv: `mb_s` from 10^9 bytes (its ops and iops to match), every other column as
    a plain local run has it; `over` sets any column."""
    durable = durable or mb_s
    r = {
        "campaign": "c",
        "host": "h",
        "array": array,
        "target": target,
        "fs_type": "raw" if target == "raw" else over.pop("fs_type", target),
        "op": op,
        "pattern": "seq",
        "block_size": block_size,
        "direct": False,
        "streams": 1,
        "rep": rep,
        "bytes": 10**9,
        "seconds": 1e3 / mb_s,
        "mb_s": mb_s,
        "seconds_durable": 1e3 / durable,
        "mb_s_durable": durable,
        "engine": "python",
        "cache": "drop",
        "cached_before": 0.0,
        "started_at": "2024-01-01T00:00:00Z",
        "ops": 10**9 // block_size,
        "iops": mb_s * 1e6 / block_size,
        "flags": "",
    }
    r.update(over)
    return r


def frame(rows) -> pd.DataFrame:
    """Rows as measurements.csv has them: every column, in order."""
    return pd.DataFrame(rows, columns=MEASUREMENT_COLUMNS)


# The 2012 seed's dd log as baselines.csv holds it (7 runs of 20 GiB): for the statistics and plot tests.
SEED_RUNS = [  # target, op, block size, seconds, real
    ("raw", "write", MiB, 68.929, 78.373),
    ("raw", "read", MiB, 51.2106, 51.335),
    ("ext3", "write", MiB, 156.81, 192.603),
    ("ext3", "read", MiB, 67.165, 67.334),
    ("ext3", "read", 4 * MiB, 63.088, 63.222),
    ("xfs", "write", MiB, 79.7094, 89.821),
    ("xfs", "read", MiB, 52.4275, 52.564),
]


SEED_BYTES = 20 * 2**30  # each seed run moved 20 GiB (bs=1M count=20480)


def seed_baseline(name="3ware-2012") -> pd.DataFrame:
    """The seed's seven dd runs as baselines.csv rows."""
    rows = []
    for target, op, bs, seconds, real in SEED_RUNS:
        rate, durable = SEED_BYTES / seconds / 1e6, SEED_BYTES / real / 1e6
        rows.append(
            row(
                target,
                op,
                rate,
                1,
                array=name,
                block_size=bs,
                durable=durable,
                campaign=name,
                host="",
                bytes=SEED_BYTES,
                seconds=seconds,
                seconds_durable=real,
                engine="dd-log",
                cache="",
                cached_before=float("nan"),
                started_at="",
            )
        )
    return frame(rows)


# The engine tests (python, dd, fio): jobs on plain files, and the progress lines they log.

from fsbench.engines.job import Job, Stream  # noqa: E402
from fsbench.toolkit.latency import COLUMNS as LATENCY_COLUMNS  # noqa: E402

# What job.aggregate gives for a measurement, and the keys every stream of it has (engines add their own).
# recorded_series: what completed when (timeseries.raw; {} for dd).
FIGURE_KEYS = {"bytes", "seconds", "seconds_durable", "started_at", "command", "streams", "ops", "recorded_series"}
FIGURE_KEYS |= set(LATENCY_COLUMNS)
STREAM_KEYS = {"path", "offset", "bytes", "start", "end", "end_durable"}


def file_job(paths, size: int = 16 * MiB, bs: int = MiB, **kw) -> Job:
    """A job with one file stream per path."""
    return Job(streams=tuple(Stream(str(p)) for p in paths), size=size, block_size=bs, **kw)


def logged_progress(caplog, op: str, total: int, share: int) -> list[int]:
    """The bytes done in each progress line logged for `op`, checked: the python engine's format, in order,
    never above `total`, at least one taken mid-run, and (several streams of `share` bytes each) counting
    more than one stream."""
    line = re.compile(rf"{op}: (\d+) of {total} bytes \(\d+ %\), \d+ MB/s, about (\d+|inf) s left")
    done = [int(m[1]) for r in caplog.records if r.name == "fsbench" and (m := line.fullmatch(r.getMessage()))]
    assert len(done) >= 3, f"too few progress lines for {op}: {caplog.text}"
    assert done == sorted(done) and 0 <= done[0] and done[-1] <= total, done
    assert any(0 < n < total for n in done), f"no progress line taken while {op} ran: {done}"
    if total > share:
        assert max(done) > share, f"only one stream's bytes counted: {done}"
    return done


# A campaign through the Slurm profile, polling often: Slurm jobs run one at a time (storage_io=1), so each
# second between a job's end and Snakemake noticing it is paid once per job.
SLURM_PROFILE = [
    "--profile",
    str(REPO / "profiles" / "slurm"),
    "--seconds-between-status-checks",
    "2",
    "--slurm-init-seconds-before-status-checks",
    "1",
]


SLURM_LOCK = Path("/tmp/fsbench-slurm.lock")  # one local Slurm per machine (tools/slurm_local.py)


def lock_held_above() -> bool:
    """Whether a process this one descends from holds SLURM_LOCK (pytest run under `flock SLURM_LOCK ...`)."""
    try:
        inode = SLURM_LOCK.stat().st_ino
        locks = Path("/proc/locks").read_text().splitlines()
    except FileNotFoundError:
        return False
    holders = {int(f[4]) for f in map(str.split, locks) if "FLOCK" in f and f[5].endswith(f":{inode}")}
    pid = os.getppid()
    while pid > 1:
        if pid in holders:
            return True
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return False


@contextmanager
def slurm_lock():
    """SLURM_LOCK held while the body runs (waiting for whoever holds it), unless an ancestor already holds it."""
    if lock_held_above():
        yield
        return
    with SLURM_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@contextmanager
def slurm_cluster(base: Path, nodes: int = 1, shared: Path | None = None, fs: str = "glusterfs"):
    """A real Slurm of `nodes` nodes (tools/slurm_local.py), or `missing` saying why there is none; with `shared`,
    also a shared filesystem (`fs`: a GlusterFS volume, or CephFS) every node mounts there through a client of its
    own. Afterwards every daemon, mount and namespace it started is stopped, and the daemons' processes are gone."""
    sys.path.insert(0, str(REPO / "tools"))
    import slurm_local

    with slurm_lock():
        try:
            wait_for_other_slurm(base)
            env = slurm_local.start(base, nodes, shared, fs)
        except slurm_local.Unavailable as e:
            what = f" with a shared {fs}" if shared else ""
            missing("ceph" if shared and fs == "ceph" else "slurm", f"no {nodes}-node Slurm{what} here: {e}")
        try:
            yield env
        finally:
            stopped = slurm_local.stop(base)
        check_stopped(stopped, nodes, fs if shared else None)


def cluster_processes(base: Path) -> list[str]:
    """Every process whose command line names this cluster's folder (its servers and clients, Slurm's daemons)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().decode(errors="replace")
        except OSError:
            continue
        if str(base) in argv:
            found.append(argv.replace("\0", " "))
    return found


def wait_for_other_slurm(base: Path, wait_s: float = 1200) -> None:
    """Wait while another local Slurm runs (a slurmctld, started by a program that does not take SLURM_LOCK), at
    most `wait_s`; then slurm_local.start says why it cannot start, if it still cannot."""

    def slurmctld_runs() -> bool:
        for comm in Path("/proc").glob("[0-9]*/comm"):
            try:
                if comm.read_text().strip() == "slurmctld":
                    return True
            except OSError:
                pass
        return False

    deadline = time.monotonic() + wait_s
    while slurmctld_runs() and time.monotonic() < deadline:
        time.sleep(5)


def check_stopped(stopped: list[str], nodes: int, shared: str | None = None) -> None:
    """slurm_local.stop's answer: every daemon, mount and namespace it started is stopped, and the daemons are
    gone (with a shared filesystem also a client per node, its servers and a mount namespace per extra node: for
    GlusterFS the brick and glusterd, for CephFS the mon, mgr, OSDs and MDS)."""
    import cephfs_local
    import slurm_local

    namespaces = [f"netns {node}" for node in slurm_local.extra_nodes(nodes)]
    expected = nodes + 2 + len(namespaces)
    if shared:
        expected += nodes + (3 + cephfs_local.OSDS if shared == "ceph" else 2) + len(namespaces)
    assert len(stopped) == expected and set(namespaces) <= set(stopped), stopped
    for line in stopped:
        if "(" in line:
            pid = int(line.split("(")[1].rstrip(")"))
            assert not os.path.exists(f"/proc/{pid}") or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()


# The tests' one throttle: a block device of a test's own held at a rate it can change while it runs
# (tests/slowdev.py: the cgroup v1 blkio throttle where there is one, else a loop device over a paced FUSE file).
needs_throttle = pytest.mark.needs("throttle")


def slow_unavailable() -> str | None:
    return slowdev.unavailable()


def slow_device(folder: Path, size: int, rate: int, faults: dict | None = None):
    """A SlowDevice (.dev, .set_rate) of `size` bytes at `rate` bytes/s, its files under `folder`; with `faults`
    ({"drop": offset, "flip": offset}) one that loses and damages writes there (slowdev.Faults)."""
    if reason := slowdev.fuse_unavailable() if faults else slow_unavailable():
        missing("throttle", reason)
    return slowdev.slow_device(folder, size, rate, faults)


def proc_state(pid: int) -> str | None:
    """The one-letter state of process `pid` (R, S, T for stopped, Z...), None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


@contextmanager
def frozen_holding(argv: list[str], cwd: Path, log: Path, lock: Path, holder: str):
    """Run `argv` in a process group of its own until one of its processes holds `lock` (the lock file reads
    `holder` with that pid in it, which is written only once the flock is taken), then freeze the whole group
    (SIGSTOP) for the body, so the lock stays held however fast the run would be. Afterwards the group continues
    and is waited for (it is never left stopped); yields the Popen, whose output goes to `log`."""
    with log.open("w") as out:
        run = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while True:
            said = re.search(holder, lock.read_text()) if lock.exists() else None
            try:  # a file left by an earlier run names a pid outside this group
                if said and os.getpgid(int(said[1])) == run.pid:
                    break
            except ProcessLookupError:
                pass
            if run.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the first run never held {lock}:\n{log.read_text()[-3000:]}")
            time.sleep(0.01)
        os.killpg(run.pid, signal.SIGSTOP)
        pid = int(said[1])
        # Alive now, it can no longer let go: it stops at its next return from the kernel, or (state D) waits
        # in vfork for a child that is stopped too. Only its exit would have released the lock.
        if proc_state(pid) in (None, "Z"):
            pytest.fail(f"pid {pid} ended before it could be held:\n{log.read_text()[-3000:]}")
        yield run
    finally:
        with suppress(ProcessLookupError):  # the group is gone when the run ended early
            os.killpg(run.pid, signal.SIGCONT)
        try:
            run.wait(timeout=600)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
            raise


def ram_xfs_campaign(scratch, name, raw: bool = False, **io) -> dict:
    """xfs (and raw, if asked) on a 320 MiB loop image over RAM, direct I/O, once: the workload tests' campaign."""
    return {
        "campaign": name,
        "scratch": str(scratch),
        "arrays": {"ram": {"kind": "loop", "size": "320MiB"}},
        "raw": raw,
        "filesystems": {"xfs": {"type": "xfs"}},
        "io": {"direct": [True], "repeats": 1} | io,
    }


def small_campaign(scratch, name, **io) -> dict:
    """One ext4 on a 192 MiB loop image, 16 MiB in 1 MiB blocks, once: the smallest campaign with every step."""
    return {
        "campaign": name,
        "scratch": str(scratch),
        "arrays": {"demo": {"kind": "loop", "size": "192MiB"}},
        "raw": False,
        "filesystems": {"ext4": {"type": "ext4"}},
        "io": {"size": "16MiB", "block_sizes": ["1MiB"], "repeats": 1} | io,
    }


def postgres_bin() -> Path | None:
    """Where initdb and pg_ctl are: on PATH, or Debian's /usr/lib/postgresql/<version>/bin."""
    import shutil

    if found := shutil.which("initdb"):
        return Path(found).resolve().parent
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


@contextmanager
def postgres_server(password: str | None = None):
    """A throwaway PostgreSQL server of the caller's own (initdb + pg_ctl as the postgres user); its URL. Without a
    password it listens only on a Unix socket in a private folder (trust); with one, also on 127.0.0.1 at a free
    port, where it asks for the password (scram-sha-256) and the URL names the host and port but never the
    password. Stopped and deleted afterwards, also when the caller fails."""
    import pwd
    import shutil
    import socket

    bin_dir = postgres_bin()
    if bin_dir is None:
        missing("postgres", "no PostgreSQL (apt-get install postgresql): `make setup` installs it")
    if os.geteuid() != 0:
        missing("postgres", "starting a PostgreSQL server as the postgres user needs root")
    user = pwd.getpwnam("postgres")
    root = Path("/var/tmp/fsbench-pg") / uuid.uuid4().hex[:12]
    data, sock = root / "data", root / "sock"
    sock.mkdir(parents=True)
    root.parent.chmod(0o755)  # the postgres user must get through to its folders
    for p in (root, sock):
        os.chown(p, user.pw_uid, user.pw_gid)

    def as_postgres(*argv):
        return subprocess.run(
            ["runuser", "-u", "postgres", "--", *argv], capture_output=True, text=True, check=True, cwd=root
        )

    try:
        init = [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--no-sync", "--auth-local=trust"]
        opts = f"-k {sock} -c listen_addresses='' -p 5432 -c fsync=off"
        url = f"postgresql://postgres@/postgres?host={sock}&port=5432"
        if password is not None:
            pwfile = root / "pw"
            pwfile.write_text(password + "\n")
            os.chown(pwfile, user.pw_uid, user.pw_gid)
            init += ["--auth-host=scram-sha-256", f"--pwfile={pwfile}"]
            with socket.socket() as s:  # a free port (another test's server may hold any fixed one)
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            opts = f"-k {sock} -c listen_addresses=127.0.0.1 -p {port} -c fsync=off"
            url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        else:
            init += ["--auth-host=trust"]
        as_postgres(*init)
        as_postgres(str(bin_dir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "log"), "-w", "start")
        yield url
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                [
                    "runuser",
                    "-u",
                    "postgres",
                    "--",
                    str(bin_dir / "pg_ctl"),
                    "-D",
                    str(data),
                    "-m",
                    "immediate",
                    "stop",
                ],
                capture_output=True,
            )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres(tmp_path):
    """A PostgreSQL server of this test's own on a Unix socket (postgres_server); its URL."""
    with postgres_server() as url:
        yield url


# The test server's password: a string that appears nowhere else, so that finding it in a file means it leaked.
PG_PASSWORD = "fsbench-secret-" + uuid.uuid4().hex


@pytest.fixture
def postgres_tcp(monkeypatch):
    """A PostgreSQL server of this test's own over TCP that asks for PG_PASSWORD; its URL (without the password).
    The password is in PGPASSWORD for this test and the processes it starts, where libpq finds it."""
    with postgres_server(PG_PASSWORD) as url:
        monkeypatch.setenv("PGPASSWORD", PG_PASSWORD)
        yield url
