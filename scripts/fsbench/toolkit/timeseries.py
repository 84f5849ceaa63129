"""A measurement over time: bytes and operations per interval, and what they say about the figure.

Engines record what completed when at their own resolution (the python engine's C loop in bins of 1 ms × 10^k,
fio in its 10 ms bandwidth and IOPS log windows); `series()` turns that into the measurement's series at
io.log_interval (default 1 s), or at a tenth, hundredth... of it when the measurement is shorter than ten
intervals, so that even a short one has several points. From a series:

- `drop`: some interval ran below `share` (io.drop, default 0.5) of the series' median rate, or of the median of
  the intervals before it where that is higher: a cache running out, a throttle, a stall. Judged on windows of at
  least DROP_WINDOW seconds and a few operations each (else a scheduler's hiccup would look like a drop): pairs of
  intervals are merged until they are; at least three windows, and a last interval cut short by the end of the run
  is left out.
- `not-steady` (time-based runs, io.steady): the SNIA PTS steady-state test on the last `window` intervals: their
  range (max − min) within `range` of their mean, and the excursion of their least-squares line (slope ×
  (window − 1)) within `slope` of it.
- `stonewall` (all-hosts cells): how far every host had got when the first one finished (IOR's stonewalling).
- `stragglers`: hosts whose rate is well below the others'.
"""

import math
from statistics import median

LOG_INTERVAL = 1.0  # io.log_interval's default, seconds
DROP_SHARE = 0.5  # io.drop's default
STEADY = {"window": 5, "range": 0.20, "slope": 0.10}  # io.steady's values where a key is left out
MIN_POINTS = 10  # a series is made finer (log_interval / 10^k) until the measurement spans this many intervals
MIN_OPS = 4  # a drop is judged on intervals holding at least this many operations (median)
# ... and lasting at least this long (s): on a shared machine the scheduler stalls a process for 10 ms now and then,
# which is no drop of the storage's rate (seen here: 10 ms intervals flagged nearly every measurement).
DROP_WINDOW = 0.2
# A host is a straggler when its rate is below the other hosts' median by more than MAD_FACTOR × their median
# absolute deviation, and by more than FEW_HOSTS_SHARE of the median (their MAD is 0 or meaningless with 1-2
# others, so then the share alone decides).
MAD_FACTOR = 3.0
FEW_HOSTS_SHARE = 0.25


def interval_for(duration: float, log_interval: float = LOG_INTERVAL, resolution: float = 0.0) -> float:
    """The series' interval: log_interval, or a tenth, hundredth... of it so that `duration` spans MIN_POINTS of
    them; never finer than what the engine recorded (`resolution`)."""
    interval = log_interval
    while duration < MIN_POINTS * interval and interval / 10 >= resolution and interval > 1e-6:
        interval /= 10
    return interval


def raw(start: float, step: float, nbytes, ops, source: str) -> dict:
    """What an engine recorded: bin i holds what completed in [start + i·step, start + (i+1)·step)."""
    return {"start": start, "step_s": step, "bytes": list(nbytes), "ops": list(ops), "source": source}


def combine(parts: list[dict]) -> dict:
    """Several raw series (a measurement's streams, or an all-hosts cell's hosts) as one, at the coarsest of
    their steps, from the earliest start: each bin goes to the one holding its end time."""
    parts = [p for p in parts if p]
    if not parts:
        return {}
    step, start = max(p["step_s"] for p in parts), min(p["start"] for p in parts)
    # Offsets first, then sums: epoch seconds (~1.8e9) keep only ~0.2 us.
    size = max(_slot((p["start"] - start) + len(p["bytes"]) * p["step_s"], step) + 1 for p in parts)
    nbytes, ops = [0] * size, [0] * size
    for p in parts:
        for i, (b, o) in enumerate(zip(p["bytes"], p["ops"], strict=True)):
            k = _slot((p["start"] - start) + (i + 1) * p["step_s"], step)
            nbytes[k] += b
            ops[k] += o
    return _trim(raw(start, step, nbytes, ops, parts[0]["source"]))


def _slot(end_offset: float, step: float) -> int:
    """The bin of width `step` from 0 that holds time `end_offset` (an end exactly on an edge: the bin it closes)."""
    return max(0, math.ceil(end_offset / step - 1e-6) - 1)


def _trim(r: dict) -> dict:
    while r["bytes"] and not r["bytes"][-1] and not r["ops"][-1]:
        r["bytes"].pop()
        r["ops"].pop()
    return r


def series(recorded: dict, duration: float, log_interval: float = LOG_INTERVAL) -> dict:
    """The record's `timeseries`: the recorded bins summed into intervals of interval_for(duration), each with
    its end `t_s` (seconds from the start) and length `interval_s` (the last may be shorter: it ends with the
    measurement, or with the last bin, whichever is later). {} where nothing was recorded (dd)."""
    if not recorded:
        return {}
    step = recorded["step_s"]
    # At least what the bins span: fio's `seconds` (its calls' time) can end before its last logged completion.
    duration = max(duration, len(recorded["bytes"]) * step)
    interval = interval_for(duration, log_interval, step)
    n = max(1, math.ceil(duration / interval - 1e-9))
    nbytes, ops = [0] * n, [0] * n
    for i, (b, o) in enumerate(zip(recorded["bytes"], recorded["ops"], strict=True)):
        k = min(_slot((i + 1) * step, interval), n - 1)  # the last bin may close just after the measurement's end
        nbytes[k] += b
        ops[k] += o
    ends = [min((k + 1) * interval, duration) for k in range(n)]
    return {
        "start": recorded["start"],
        "interval_s": interval,
        "resolution_s": step,
        "source": recorded["source"],
        "t_s": [round(t, 9) for t in ends],
        "interval_lengths_s": [round(t - (k * interval), 9) for k, t in enumerate(ends)],
        "bytes": nbytes,
        "ops": ops,
    }


def rates(ts: dict) -> list[float]:
    """Bytes per second of each interval."""
    return [b / length if length > 0 else 0.0 for b, length in zip(ts["bytes"], ts["interval_lengths_s"], strict=True)]


def _partial_end(ts: dict) -> bool:
    lengths = ts["interval_lengths_s"] if ts else []
    return len(lengths) > 1 and lengths[-1] < 0.99 * ts["interval_s"]


def _judged(ts: dict) -> tuple[list[int], list[float], list[int]]:
    """The series' bytes, lengths and ops, without a last interval shorter than the others (the run ended in
    it: the one operation that ended it says little about a rate), pairs merged until the median interval holds
    MIN_OPS operations and lasts DROP_WINDOW."""
    nbytes, lengths, ops = list(ts["bytes"]), list(ts["interval_lengths_s"]), list(ts["ops"])
    if _partial_end(ts):
        nbytes, lengths, ops = nbytes[:-1], lengths[:-1], ops[:-1]
    while len(ops) >= 2 * 3 and (median(ops) < MIN_OPS or median(lengths) < DROP_WINDOW):
        pairs = range(0, len(ops) - 1, 2)  # an odd last interval goes
        nbytes = [nbytes[i] + nbytes[i + 1] for i in pairs]
        lengths = [lengths[i] + lengths[i + 1] for i in pairs]
        ops = [ops[i] + ops[i + 1] for i in pairs]
    return nbytes, lengths, ops


def drop(ts: dict, share: float = DROP_SHARE) -> dict | None:
    """Where the series fell furthest below `share` of its median rate (or of the median before, where higher):
    {"at_s", "rate", "median" (the one it fell from), "share"}, or None (no drop, or too few operations per
    interval to judge)."""
    if not ts:
        return None
    nbytes, lengths, ops = _judged(ts)
    if len(ops) < 3 or median(ops) < MIN_OPS or median(lengths) < DROP_WINDOW * 0.99:
        return None  # too short a run to tell a drop from noise
    found = [b / t for b, t in zip(nbytes, lengths, strict=True)]
    overall = median(found)
    # What an interval falls from: the median of the whole series, or of the intervals before it where that is
    # higher (a cache that runs out a third of the way in leaves a median of the slow part).
    refs = [max(overall, median(found[:i]) if i >= 3 else 0.0) for i in range(len(found))]
    low = min(range(len(found)), key=lambda i: found[i] / refs[i] if refs[i] > 0 else math.inf)
    if refs[low] <= 0 or found[low] >= share * refs[low]:
        return None
    return {"at_s": round(sum(lengths[: low + 1]), 6), "rate": found[low], "median": refs[low], "share": share}


def steady(ts: dict, window: int = 5, range_: float = 0.20, slope: float = 0.10) -> dict:
    """The SNIA steady-state test on the last `window` whole intervals: {"steady", "range", "excursion", "mean",
    "window"}; range and excursion as shares of the window's mean rate. Fewer intervals than that: not steady."""
    found = rates(ts) if ts else []
    if _partial_end(ts):
        found = found[:-1]
    if len(found) < window or window < 2:
        return {"steady": False, "window": window, "why": f"{len(found)} whole intervals, fewer than {window}"}
    y = found[-window:]
    mean = sum(y) / window
    xm = (window - 1) / 2
    fit = sum((x - xm) * (v - mean) for x, v in enumerate(y)) / sum((x - xm) ** 2 for x in range(window))
    spread = (max(y) - min(y)) / mean if mean > 0 else math.inf
    excursion = abs(fit) * (window - 1) / mean if mean > 0 else math.inf
    return {
        "steady": spread <= range_ and excursion <= slope,
        "window": window,
        "mean": mean,
        "range": spread,
        "excursion": excursion,
    }


def _steady_args(check: dict) -> dict:
    check = STEADY | check
    return {"window": check["window"], "range_": check["range"], "slope": check["slope"]}


def judge(ts: dict, drop_share: float = DROP_SHARE, steady_check: dict | None = None) -> dict:
    """What the record keeps of the judgement: the drop found (or None) and the steady-state test (if asked)."""
    out = {"drop": drop(ts, drop_share) if ts else None}
    if steady_check is not None:
        out["steady"] = steady(ts, **_steady_args(steady_check)) if ts else {"steady": False, "why": "no series"}
    return out


def moved_by(ts: dict, t: float) -> float:
    """Bytes the series had moved `t` seconds after its start (linear within an interval)."""
    total, begin = 0.0, 0.0
    for b, end in zip(ts["bytes"], ts["t_s"], strict=True):
        if t >= end:
            total += b
        elif t > begin:
            total += b * (t - begin) / (end - begin)
        begin = end
    return total


def stonewall(hosts: dict[str, dict]) -> dict:
    """All-hosts cell: per host its first and last completion time (seconds from the common start, the earliest
    host start), the first-done and last-done of the cell, the tail (last − first), and the stonewall figure: the
    bytes every host had moved when the first finished, over that time (IOR's stonewalling).

    `hosts`: name → {"start": epoch, "end": epoch, "bytes": total, "timeseries": its series}."""
    t0 = min(h["start"] for h in hosts.values())
    done = {name: h["end"] - t0 for name, h in hosts.items()}
    first = min(done.values())
    moved = 0.0
    for name, h in hosts.items():
        ts = h.get("timeseries")
        if done[name] <= first:  # done by then: all of it (its series' clock may end a little past its end)
            moved += h["bytes"]
        elif ts:
            moved += min(h["bytes"], moved_by(ts, first - (ts["start"] - t0)))
        else:  # no series (dd): evenly over its run, the best guess there is
            took = h["end"] - h["start"]
            moved += h["bytes"] * min(1.0, max(0.0, first - (h["start"] - t0)) / took) if took > 0 else h["bytes"]
    return {
        "first_done_s": first,
        "last_done_s": max(done.values()),
        "tail_s": max(done.values()) - first,
        "stonewall_bytes": moved,
        "stonewall_mb_s": moved / first / 1e6 if first > 0 else math.nan,
        "done_s": done,
    }


def stragglers(rates_by_host: dict[str, float]) -> dict[str, str]:
    """Hosts whose rate is below the others' median by more than MAD_FACTOR × the others' MAD and by more than
    FEW_HOSTS_SHARE of that median (with fewer than three others, by the share alone): host → why."""
    found = {}
    for name, mine in rates_by_host.items():
        others = [r for h, r in rates_by_host.items() if h != name]
        if not others:
            continue
        mid = median(others)
        mad = median(abs(r - mid) for r in others)
        gap = mid - mine
        if gap > FEW_HOSTS_SHARE * mid and (len(others) < 3 or gap > MAD_FACTOR * mad):
            found[name] = (
                f"{mine / 1e6:.1f} MB/s, {gap / mid:.0%} below the other hosts' median {mid / 1e6:.1f} MB/s"
                + (f" (MAD {mad / 1e6:.1f})" if len(others) >= 3 else "")
            )
    return found
