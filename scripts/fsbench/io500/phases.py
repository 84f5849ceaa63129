"""IO500's phases, pure: their order and kinds, where each process's transfers go, the stonewall wear-out, the
score, and what makes a phase not valid for the list. Follows github.com/IO500/io500 (io500.sh, src/phase_*.c)."""

import fnmatch
import math
from dataclasses import dataclass

from fsbench.campaign import config
from fsbench.engines.metadata import mdtest_name

# The run order of io500.sh / src/main.c.
PHASES = (
    "ior-easy-write",
    "mdtest-easy-write",
    "ior-hard-write",
    "mdtest-hard-write",
    "find",
    "ior-easy-read",
    "mdtest-easy-stat",
    "ior-hard-read",
    "mdtest-hard-stat",
    "mdtest-easy-delete",
    "mdtest-hard-read",
    "mdtest-hard-delete",
)
IOR = tuple(p for p in PHASES if p.startswith("ior-"))
MD = tuple(p for p in PHASES if not p.startswith("ior-"))
WRITES = ("ior-easy-write", "mdtest-easy-write", "ior-hard-write", "mdtest-hard-write")
# Where a later phase finds how much a write phase made (its items per process, after wear-out).
MADE_BY = {p: f"{p.rsplit('-', 1)[0]}-write" for p in PHASES if p not in WRITES and p != "find"}
# Phases that read back what another process wrote (IOR -C, mdtest -N): the reads and stats.
READS = ("ior-easy-read", "mdtest-easy-stat", "ior-hard-read", "mdtest-hard-stat", "mdtest-hard-read")
COLD = READS + ("find", "mdtest-easy-delete", "mdtest-hard-delete")  # caches dropped before these

# Fixed by the list: bytes per transfer of ior-hard, bytes of each mdtest-hard file (the campaign's space check
# needs them too).
IOR_HARD_TRANSFER = config.IOR_HARD_TRANSFER
MDTEST_HARD_BYTES = config.MDTEST_HARD_BYTES
LIST_STONEWALL = 300  # seconds a write phase must run for the list
GIB = 2**30


# IO500's find (src/phase_find.c): files named like this, of mdtest-hard's size, newer than the run's timestamp
# file. Only a name that matches is stat'ed, so the figure is the walk plus those stats, as pfind's.
FIND_NAME = "*01*"


def find_matches(nprocs: int, hard_files: int) -> int:
    """How many files IO500's find must find: the mdtest-hard files whose names match (the only files of
    MDTEST_HARD_BYTES; mdtest-easy's are empty, the ior files far larger)."""
    return sum(fnmatch.fnmatchcase(mdtest_name(r, i), FIND_NAME) for r in range(nprocs) for i in range(hard_files))


def unit(phase: str) -> str:
    return "GiB/s" if phase.startswith("ior-") or phase == "bw" else ("" if phase == "score" else "kIOPS")


def ior_hard_offset(rank: int, segment: int, nprocs: int) -> int:
    """Byte offset of `rank`'s transfer in `segment` of the shared file: segment by segment, each process's
    transfer after the ranks before it (IOR -s segmentCount -t 47008 -b 47008 on one file)."""
    return (segment * nprocs + rank) * IOR_HARD_TRANSFER


def read_shift(processes: int, hosts: int, read_from: str) -> int:
    """How many ranks on a reader's partner is (IOR -C shifts by the tasks per node, mdtest -N likewise): the next
    host's process of the same place, or on one host the next process; 0 reads its own."""
    if read_from == "self":
        return 0
    return processes if hosts > 1 else 1


def partner(rank: int, nprocs: int, shift: int) -> int:
    """The rank whose data `rank` reads."""
    return (rank + shift) % nprocs


def wear_out(done: list[int], limit: int) -> int:
    """IOR's stoneWallingWearOut: after the stonewall every process writes on until it holds as many items as
    the furthest one had (never more than the phase's own limit)."""
    return min(max(done), limit)


@dataclass(frozen=True)
class Figure:
    phase: str
    value: float
    seconds: float
    valid: bool
    invalid_reasons: str


def value_of(phase: str, amount: float, seconds: float) -> float:
    """A phase's figure: GiB/s of the bytes for ior phases, kIOPS of the items for the others."""
    if seconds <= 0:
        return float("nan")
    return amount / GIB / seconds if phase.startswith("ior-") else amount / 1000 / seconds


def list_rules(phase: str, seconds: float, stonewall: float | None) -> list[str]:
    """Why a phase would not be valid for the list by its rules alone: a write phase shorter than the list's
    stonewall (300 s), or run without one. These judge a submission, not the figure."""
    found = []
    if phase in WRITES:
        if stonewall is None:
            found.append(f"no stonewall-time: the list asks write phases of at least {LIST_STONEWALL} s")
        elif stonewall < LIST_STONEWALL:
            found.append(f"stonewall-time {stonewall:g} s is under the list's {LIST_STONEWALL} s")
        if seconds < LIST_STONEWALL:
            found.append(f"ran {seconds:.3g} s, under the list's {LIST_STONEWALL} s")
    return found


def reasons(phase: str, seconds: float, stonewall: float | None, extra: list[str] = ()) -> list[str]:
    """Why a phase would not be valid for the list: what doubts its figure (`extra`: a count that does not match,
    a warm read), then the list's own rules (list_rules)."""
    return [*extra, *list_rules(phase, seconds, stonewall)]


def figure_doubts(phase: str, seconds: float, stonewall: float | None, invalid_reasons: str) -> list[str]:
    """Of a record's reasons (joined by "; "), those that doubt the figure itself: what remains without the list's
    rules. A short campaign's phases are still measurements to follow over time (the history judges by these)."""
    rules = set(list_rules(phase, seconds, stonewall))
    return [r for r in (invalid_reasons or "").split("; ") if r and r not in rules]


def geomean(values: list[float]) -> float:
    if not values or any(not v > 0 for v in values):
        return float("nan")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def score(figures: dict[str, Figure]) -> list[Figure]:
    """The rows bw (geometric mean of the ior phases, GiB/s), md (of the others, kIOPS) and score = sqrt(bw × md);
    each valid only if every phase it is made of is."""
    out = []
    for name, phases in (("bw", IOR), ("md", MD)):
        parts = [figures[p] for p in phases]
        bad = [p.phase for p in parts if not p.valid]
        why = f"not valid: {', '.join(bad)}" if bad else ""
        out.append(Figure(name, geomean([p.value for p in parts]), sum(p.seconds for p in parts), not bad, why))
    bw, md = out
    bad = [f.phase for f in out if not f.valid]
    why = f"not valid: {', '.join(bad)}" if bad else ""
    out.append(Figure("score", math.sqrt(bw.value * md.value), bw.seconds + md.seconds, not bad, why))
    return out
