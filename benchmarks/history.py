"""make bench-history: how often `history changes` cries wolf, and how soon it finds a real step.

Synthetic stores judged the way `history changes` judges one call (fsbench.history.changes.judge: one test per
series, Benjamini–Hochberg across the store's series, history_min_change 5 %):

- false alarms: STORES stores of 50 flat series × 20 runs, with 3 % normal noise, and with heavy-tailed noise
  (Student's t, 3 degrees of freedom, scaled by 3 %); a store with any alarm (regression, improvement or
  suspected) counts once. Target: at most 5 of 100 stores.
- a 10 % step with 3 runs after it (20 before), 3 % normal noise; found = a confirmed change at exactly that
  run. Judged alone (a store of that one series), and in stores of 50 series of which 10 step (by ×1.1 or
  ×1/1.1), where Benjamini–Hochberg asks more of each. Target: ≥ 90 % of the steps.
- a 3× step: stores of 50 series × 21 runs, 10 of them stepping by ×3 or ×1/3 at the last run (20 before, 1
  after); found = `suspected` at that run. Target: ≥ 99 %. And the same after only 3 runs (a nightly job's fourth
  night), each series' noise drawn between 3 and 12 % (WOBBLE): its noise is barely known from 3 runs.

A run's value is its median: 100 × exp(noise). Seeds: the thresholds in changes.py were chosen on seeds 0-99
(`--choose` prints the same figures on them); the figures here come from seeds 10,000 on, never used to choose.
SMOKE=1: 3 stores per row, the targets not checked (a test runs it so a broken benchmark fails). Otherwise the
table is printed, written to docs/bench-history.md, and the exit status is 1 if a target is missed.
"""

import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from fsbench.history import changes  # noqa: E402

SERIES, STEPPED, RUNS = 50, 10, 20
NOISE = 0.03
WOBBLE = (0.03, 0.12)  # the noise of series on a loaded machine: 12 % seen (tests/test_history_campaign.py)
EVAL_SEED, CHOOSE_SEED = 10_000, 0


def noise(rng, shape, heavy: bool) -> np.ndarray:
    return NOISE * (rng.standard_t(3, shape) if heavy else rng.standard_normal(shape))


def flat_store(rng, heavy: bool) -> bool:
    values = 100 * np.exp(noise(rng, (SERIES, RUNS), heavy))
    return any(changes.judge(list(values)))


def step_store(rng, factor: float, after: int, before: int = RUNS, wobbly: bool = False) -> tuple[int, int, int]:
    """(found, stepped, false alarms on the flat series) of one store with STEPPED stepping series. `wobbly`: each
    series' noise drawn between 3 and 12 % (a loaded machine's nights), not 3 %."""
    values = 100 * np.exp(noise(rng, (SERIES, before + after), False))
    if wobbly:
        values = 100 * (values / 100) ** (rng.uniform(*WOBBLE, (SERIES, 1)) / NOISE)
    signs = rng.choice([-1, 1], STEPPED)
    for i, s in enumerate(signs):
        values[i, before:] *= factor**s
    judged = changes.judge(list(values))
    want_confirmed = after >= changes.MIN_SIZE
    found = sum(any(c.index == before and c.confirmed == want_confirmed for c in judged[i]) for i in range(STEPPED))
    alarms = sum(bool(j) for j in judged[STEPPED:])
    return found, STEPPED, alarms


def alone(rng, factor: float, after: int) -> bool:
    values = 100 * np.exp(noise(rng, RUNS + after, False))
    values[RUNS:] *= factor ** rng.choice([-1, 1])
    return any(c.index == RUNS and c.confirmed for c in changes.find(values))


def table(stores: int, seed: int) -> list[dict]:
    rows = []
    for name, heavy in (("flat, 3 % normal noise", False), ("flat, heavy-tailed noise (t3 × 3 %)", True)):
        rng = np.random.default_rng(seed)
        alarmed = sum(flat_store(rng, heavy) for _ in range(stores))
        rows.append(
            {
                "case": name,
                "figure": f"{alarmed} of {stores} stores with any alarm",
                "value": alarmed / stores,
                "target": "≤ 5 %",
                "ok": alarmed / stores <= 0.05,
            }
        )
    rng = np.random.default_rng(seed + 2)
    found = sum(alone(rng, 1.1, 3) for _ in range(stores * STEPPED))
    rows.append(
        {
            "case": "10 % step, 3 runs after it, judged alone (confirmed at its run)",
            "figure": f"{found} of {stores * STEPPED} steps found",
            "value": found / (stores * STEPPED),
            "target": "≥ 90%",
            "ok": found / (stores * STEPPED) >= 0.9,
        }
    )
    for name, factor, after, before, wobbly, target in (
        ("10 % step, 3 runs after it, 10 of 50 series of a store (confirmed at its run)", 1.1, 3, RUNS, False, 0.90),
        ("3× step, 1 run after it (suspected at its run)", 3.0, 1, RUNS, False, 0.99),
        ("3× step after only 3 runs, 3-12 % noise, 1 run after it (suspected at its run)", 3.0, 1, 3, True, 0.99),
    ):
        rng = np.random.default_rng(seed + 1)
        found = total = alarms = 0
        for _ in range(stores):
            f, t, a = step_store(rng, factor, after, before, wobbly)
            found, total, alarms = found + f, total + t, alarms + a
        rows.append(
            {
                "case": name,
                "figure": f"{found} of {total} steps found ({alarms} alarms on {stores * 40} flat series)",
                "value": found / total,
                "target": f"≥ {target:.0%}",
                "ok": found / total >= target,
            }
        )
    return rows


def markdown(rows: list[dict], stores: int, seed: int, seconds: float) -> str:
    lines = [
        "# make bench-history",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, {stores} stores per row, seeds from {seed} "
        f"(never used to choose a threshold), {seconds:.0f} s. Method: benchmarks/history.py's docstring and "
        "fsbench/history/changes.py's.",
        "",
        "| case | figure | share | target | met |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {r['case']} | {r['figure']} | {r['value']:.1%} | {r['target']} | {'yes' if r['ok'] else 'NO'} |"
        for r in rows
    ]
    thresholds = (
        f"FDR {changes.FDR}, SUSPECT_SIGMAS {changes.SUSPECT_SIGMAS}, MIN_SIZE {changes.MIN_SIZE}, "
        f"min change {changes.MIN_CHANGE:.0%}"
    )
    notes = [
        "",
        f"Thresholds: {thresholds}.",
        "",
        "Reading it (2026-12-05): on the seeds the thresholds were chosen on (0-99, `--choose`) the same rows give",
        "1, 13, 883/1000, 781/1000 and 994/1000. Heavy-tailed noise sits at its target, not safely under it: 4 and",
        "13 of 100 stores on the two seed sets, 18 of 300 on seeds 20,000 on (~6-7 % all told). That is the FDR",
        "itself: with every series flat, Benjamini-Hochberg at 5 % alarms in ~5 % of stores whatever the null;",
        "min change 5 % is what keeps normal noise at 0-1 % (without it: 22 of 300 normal, 20 of 300",
        "heavy-tailed stores, seeds 20,000 on), and heavy tails pass it more often. A permutation null (2,000",
        "permutations a series, exact for any noise) gave 17 of 300 (seeds 20,000 on), 8 of 100 (seeds 0 on) and",
        "769 instead of 781 steps found in stores: not taken. Safely under 5 % needs an FDR under 5 %, which",
        "costs the step rows power: the targets pull against each other here.",
        "",
        "Why a 10 % step with 3 runs after it (t ≈ 5 at its run) is missed, measured on 1,000 series judged alone",
        "(seed 0, before the change below): 876 found, 93 cut one run early (or more), 27 not significant (the",
        "largest t under 3.09, the null's 95th percentile at 23 runs; the t at the true cut is 5.4 ± 1.4, so 3.6 %",
        "fall under it). The early cuts are mostly the data's: an oracle that knows both levels and the noise puts",
        "the cut at the step in 93.7 % of 4,000 series (the largest t, 89.5 %; the cut of highest posterior with",
        "the levels integrated out, 90.4 %), so with 3 runs after a 3-sigma step about 1 in 16 is one run off",
        "whatever the method, and ~90 % at exactly its run is at the edge of what the data allow. Since then the",
        "cut is placed at its highest posterior (changes._max_t): 2,653 -> 2,670 of 3,000 found on seeds 30,000",
        "on, the false alarms unchanged (18 of 300 heavy-tailed stores before and after). In a store of 50,",
        "Benjamini-Hochberg's cutoff (~0.05 x 9/50) asks a t of ~3.9 (the null's 99th percentile) of each",
        "series' one test: that costs the ~9 points between the two rows (each stepped series has one step, so",
        "the first-candidate rule plays no part here). A fourth run after the step does not help at exactly its",
        "run: 843 of 1,000 alone (seeds 40,000 on), 823 of 1,000 in stores: the cut can now land late as well.",
        "",
    ]
    return "\n".join([*lines, *notes])


def main() -> int:
    smoke = os.environ.get("SMOKE") == "1"
    choose = "--choose" in sys.argv
    stores = 3 if smoke else 100
    seed = CHOOSE_SEED if choose else EVAL_SEED
    t0 = time.perf_counter()
    rows = table(stores, seed)
    text = markdown(rows, stores, seed, time.perf_counter() - t0)
    print(text)
    if smoke or choose:
        return 0
    (Path(__file__).resolve().parents[1] / "docs" / "bench-history.md").write_text(text)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
