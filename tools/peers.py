"""IOR and mdtest, built out of the repository from ../shared/peers/ior-5fcf0ba.tar.gz (hpc/ior, GPL-2.0).

    python tools/peers.py build     # build once into /var/tmp/fsbench-peers (apt for what is missing); prints bin/
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
