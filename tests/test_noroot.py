"""fsbench as an ordinary user, as on a cluster's login node: a user made for the test, a copy of this checkout in
their home, `make setup` and the campaigns run as them. What needs no root runs start to end; what needs it is
refused before anything runs, in one line naming the key."""

import os
import pwd
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml

from fsbench.campaign import config as campaign_config
from fsbench.campaign import privilege

from conftest import REPO, needs_root

pytestmark = needs_root  # root makes the user

SMALL_IO = {"engine": "python", "size": "8MiB", "block_sizes": ["1MiB"], "repeats": 1}


class User:
    """A user of the machine with a copy of this checkout in their home, set up by `make setup` as them."""

    def __init__(self, name: str):
        self.name = name
        entry = pwd.getpwnam(name)
        self.uid, self.gid, self.home = entry.pw_uid, entry.pw_gid, Path(entry.pw_dir)
        self.clone = self.home / "fsbench"

    def run(self, argv: list[str], cwd: Path | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
        # A login's environment, not root's: no pyenv of root's on PATH; pip's site settings (mirror) kept.
        env = {"HOME": str(self.home), "USER": self.name, "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
        env |= {k: v for k, v in os.environ.items() if k.startswith("PIP_")}
        return subprocess.run(
            argv,
            cwd=cwd or self.clone,
            env=env,
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def campaign(self, name: str, config: dict) -> subprocess.CompletedProcess:
        cfg = self.home / f"{name}.yaml"
        cfg.write_text(yaml.safe_dump({"campaign": name, "history": False} | config))
        os.chown(cfg, self.uid, self.gid)
        return self.run([".venv/bin/snakemake", "--cores", "2", "--configfile", str(cfg)])

    def folder(self, name: str) -> Path:
        path = self.home / name
        path.mkdir(exist_ok=True)
        os.chown(path, self.uid, self.gid)
        return path


@pytest.fixture(scope="module")
def user():
    """A new user with a copy of this checkout (its files as git sees them, not .venv/) and `make setup` run."""
    name = f"fsbnr{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", name], check=True)
    who = User(name)
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout.split(b"\0")
        for rel in [p.decode() for p in listed if p and p != b".venv"]:
            if (REPO / rel).is_file():
                (who.clone / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / rel, who.clone / rel)
        subprocess.run(["chown", "-R", f"{name}:{name}", str(who.home)], check=True)
        who.setup = who.run(["make", "setup"])
        yield who
    finally:
        subprocess.run(["userdel", "--remove", name], check=False, capture_output=True)
        shutil.rmtree(f"{privilege.ROOT_SCRATCH}-{name}", ignore_errors=True)


def refusal(proc: subprocess.CompletedProcess) -> str:
    """The one line of fsbench's refusal in Snakemake's output."""
    lines = [line for line in proc.stderr.splitlines() if line.startswith("fsbench: config key")]
    assert proc.returncode != 0 and len(lines) == 1, proc.stderr[-3000:]
    return lines[0]


def test_make_setup_runs_unprivileged(user):
    assert user.setup.returncode == 0, user.setup.stdout + user.setup.stderr
    assert (user.clone / ".venv" / "bin" / "snakemake").exists()
    assert (user.clone / ".venv").stat().st_uid == user.uid


def test_path_and_metadata_campaign_runs_unprivileged(user):
    """A path array in the user's own folder, reads made cold with fadvise (proven with mincore), the metadata test
    warm; the scratch is the user's own, not root's /var/tmp/fsbench."""
    data = user.folder("data")
    proc = user.campaign(
        "own",
        {
            "arrays": {"mine": {"kind": "path", "path": str(data)}},
            "io": SMALL_IO | {"cache": "fadvise"},
            "metadata": {"files": 50, "dirs": 2, "cache": "warm"},
        },
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = (user.clone / "results" / "own" / "measurements.csv").read_text()
    for workload, op in (("io", "write"), ("io", "read"), ("metadata", "stat")):
        assert any(f",{workload}," in r and f",{op}," in r for r in rows.splitlines()), (workload, op)
    own = Path(f"{privilege.ROOT_SCRATCH}-{user.name}")
    assert own.is_dir() and own.stat().st_uid == user.uid


@pytest.mark.parametrize(
    "change, key",
    [
        ({"io": SMALL_IO | {"cache": "drop"}}, "io.cache"),
        ({"metadata": {"files": 50, "dirs": 2}}, "metadata.cache"),
        ({"arrays": {"demo": {"kind": "loop", "size": "64MiB"}}, "raw": True}, "arrays.demo.kind"),
    ],
    ids=["cache-drop", "metadata-cold", "loop-array"],
)
def test_what_needs_root_is_refused_before_anything_runs(user, change, key):
    data = user.folder("data")
    config = {"arrays": {"mine": {"kind": "path", "path": str(data)}}, "io": SMALL_IO | {"cache": "fadvise"}}
    proc = user.campaign(f"refused-{key.replace('.', '-')}", config | change)
    line = refusal(proc)
    assert f"config key '{key}'" in line and f"{user.name} is not root" in line
    assert not (user.clone / "results" / f"refused-{key.replace('.', '-')}" / "runs").exists()


def test_an_unwritable_scratch_is_one_line(user, scratch):
    theirs = scratch / "roots"  # made by root, as /var/tmp/fsbench is where root ran first
    theirs.mkdir(mode=0o755)
    data = user.folder("data")
    config = {"scratch": str(theirs / "fsbench"), "arrays": {"mine": {"kind": "path", "path": str(data)}}}
    proc = user.campaign("unwritable", config | {"io": SMALL_IO | {"cache": "fadvise"}})
    line = refusal(proc)
    assert f"config key 'scratch': value '{theirs}/fsbench'" in line
    assert f"{theirs} is not writable by {user.name}" in line
    assert "Traceback" not in proc.stderr and "Errno" not in proc.stderr


def test_io500_campaign_unprivileged(user):
    """io500 with its defaults: it runs start to end where its drop-caches is false by default (issue 37), and
    is refused up front, naming io500.drop-caches, where the phases still drop caches always."""
    data = user.folder("data")
    config = {
        "arrays": {"mine": {"kind": "path", "path": str(data)}},
        "io": {"cache": "fadvise"},
        "io500": {
            "processes": 1,
            "ior-easy": {"transferSize": "64KiB", "blockSize": "1MiB"},
            "ior-hard": {"segmentCount": 10},
            "mdtest-easy": {"n": 20},
            "mdtest-hard": {"n": 15},
        },
    }
    proc = user.campaign("io500", config)
    if "drop-caches" in campaign_config.load_schema()["properties"]["io500"]["properties"]:
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "score" in (user.clone / "results" / "io500" / "io500.csv").read_text()
    else:
        assert "config key 'io500.drop-caches'" in refusal(proc)


def test_root_keeps_its_scratch():
    """A finished campaign's cells keep their params: root's default scratch is what it always was."""
    assert campaign_config.validate({})["scratch"] == "/var/tmp/fsbench"
