"""IOR and mdtest, built out of the repository from ../shared/peers/ior-5fcf0ba.tar.gz (hpc/ior, GPL-2.0), and
IO500's parallel find, pfind, from pfind-aaba722.tar.gz (github VI4IO/pfind at aaba722, LGPL-3.0, what IO500's
prepare.sh builds) where that tarball is found: ../shared/peers or /var/tmp/fsbench-peers.

    python tools/peers.py build     # build once into /var/tmp/fsbench-peers (apt for what is missing); prints bin/
                                    # and the io500 application's path (io500-02091cf.tar.gz beside IOR's)
    python tools/peers.py where     # prints the bin folder if built, else exits 1

Never copied into this repository: the tarball is read from ../shared/peers relative to the repository, built in
/var/tmp/fsbench-peers/src and installed into /var/tmp/fsbench-peers/install. A build is reused while the
tarball it came from is unchanged (its sha256 is kept beside the install).
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from apt_install import Unavailable, install

REPO = Path(__file__).resolve().parents[1]
TARBALL = REPO.parent / "shared" / "peers" / "ior-5fcf0ba.tar.gz"
ROOT = Path("/var/tmp/fsbench-peers")
PREFIX = ROOT / "install"
BIN = PREFIX / "bin"
STAMP = PREFIX / "tarball.sha256"
PFIND_TARBALLS = [TARBALL.parent / "pfind-aaba722.tar.gz", ROOT / "pfind-aaba722.tar.gz"]
PFIND_STAMP = PREFIX / "pfind.sha256"
PACKAGES = {"autoreconf": "autoconf", "automake": "automake", "libtoolize": "libtool", "pkg-config": "pkg-config"}
PACKAGES |= {"mpirun": "openmpi-bin", "mpicc": "libopenmpi-dev"}
# As root Open MPI refuses to start without these; --oversubscribe lets 2+ ranks run on 2 cores.
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def built() -> Path | None:
    """The bin folder holding ior and mdtest, if a build of the current tarball is there."""
    if not TARBALL.exists() or not STAMP.exists():
        return None
    if STAMP.read_text().strip() != _sha256(TARBALL):
        return None
    return BIN if (BIN / "ior").exists() and (BIN / "mdtest").exists() else None


def build(log=None) -> Path:
    """Build (or reuse) IOR and mdtest; returns their bin folder. `log`: a file the build's output goes to."""
    if found := built():
        return found
    if not TARBALL.exists():
        raise Unavailable(f"{TARBALL} is missing: the peers are read from ../shared/peers beside the repository")
    install(PACKAGES, "building IOR and mdtest")
    src = ROOT / "src"
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(PREFIX, ignore_errors=True)
    src.mkdir(parents=True)
    with tarfile.open(TARBALL) as tar:
        tar.extractall(src, filter="data")
    tree = src / "ior"
    out = open(log, "a") if log else subprocess.DEVNULL  # noqa: SIM115 (closed below)
    try:
        for argv in (
            ["./bootstrap"],
            ["./configure", f"--prefix={PREFIX}"],
            ["make", f"-j{os.cpu_count() or 1}"],
            ["make", "install"],
        ):
            proc = subprocess.run(argv, cwd=tree, stdout=out, stderr=subprocess.STDOUT)
            if proc.returncode != 0:
                where = f": see {log}" if log else ""
                raise Unavailable(f"{' '.join(argv)} in {tree} failed ({proc.returncode}){where}")
    finally:
        if log:
            out.close()
    STAMP.write_text(_sha256(TARBALL) + "\n")
    return BIN


def pfind(log=None) -> Path | None:
    """IO500's pfind, built (once per tarball, into IOR's bin folder) if its tarball is found; else None.
    Built as its compile.sh does, without lz4 (an optional speed-up of its work stealing between processes)."""
    tarball = next((t for t in PFIND_TARBALLS if t.exists()), None)
    if tarball is None:
        return None
    exe, digest = BIN / "pfind", _sha256(tarball)
    if exe.exists() and PFIND_STAMP.exists() and PFIND_STAMP.read_text().strip() == digest:
        return exe
    src = ROOT / "src-pfind"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(src, filter="data")
    tree = src / "pfind"
    sources = [f"src/{name}.c" for name in ("pfind-main", "pfind-options", "pfind", "option")]
    argv = ["mpicc", "-O2", "-std=gnu99", "-Wno-format-overflow", "-o", str(exe), *sources, "-lm"]
    BIN.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(argv, cwd=tree, capture_output=True, text=True)
    if log:
        with open(log, "a") as f:
            f.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise Unavailable(f"{' '.join(argv)} in {tree} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    PFIND_STAMP.write_text(digest + "\n")
    return exe


IO500_TARBALL = TARBALL.parent / "io500-02091cf.tar.gz"
IO500_STAMP = PREFIX / "io500.sha256"


def io500_built() -> Path | None:
    """The io500 application, if a build of its current tarball is there."""
    exe = ROOT / "src-io500" / "io500" / "io500"
    if not (IO500_TARBALL.exists() and exe.exists() and IO500_STAMP.exists()):
        return None
    return exe if IO500_STAMP.read_text().strip() == _sha256(IO500_TARBALL) else None


def io500(log=None) -> Path | None:
    """The io500 application (IO500/io500 at 02091cf, MIT), built once per tarball as ../shared/notes/io500.md
    says: its tree in ROOT/src-io500/io500 with the built IOR tree linked at build/ior and pfind's built by its
    compile.sh at build/pfind, then make (mpicc). Needs build() first. None where its tarball is not found."""
    if not IO500_TARBALL.exists():
        return None
    if found := io500_built():
        return found
    exe, digest = ROOT / "src-io500" / "io500" / "io500", _sha256(IO500_TARBALL)
    src = ROOT / "src-io500"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    pfind_tarball = next(t for t in PFIND_TARBALLS if t.exists())
    for tarball, where in ((IO500_TARBALL, src), (pfind_tarball, src / "io500" / "build")):
        where.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tarball) as tar:
            tar.extractall(where, filter="data")
    tree = src / "io500"
    (tree / "build" / "ior").symlink_to(ROOT / "src" / "ior")
    out = open(log, "a") if log else subprocess.DEVNULL  # noqa: SIM115 (closed below)
    try:
        for argv, cwd in ((["bash", "./compile.sh"], tree / "build" / "pfind"), (["make", "io500"], tree)):
            proc = subprocess.run(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
            if proc.returncode != 0:
                raise Unavailable(f"{' '.join(argv)} in {cwd} failed ({proc.returncode})")
    finally:
        if log:
            out.close()
    IO500_STAMP.write_text(digest + "\n")
    return exe


def mpirun(ranks: int) -> list[str]:
    """The mpirun prefix for `ranks` processes on this machine (run with MPI_ENV in the environment)."""
    return ["mpirun", "--oversubscribe", "-np", str(ranks)]


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("build", "where"):
        sys.exit(__doc__)
    if sys.argv[1] == "where":
        found = built()
        print(found or "not built", file=sys.stdout if found else sys.stderr)
        sys.exit(0 if found else 1)
    print(build(log=ROOT.parent / "fsbench-peers-build.log"))
    print(io500(log=ROOT.parent / "fsbench-peers-build.log") or "io500: no tarball")
