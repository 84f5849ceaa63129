"""make bench-history: how often `history changes` cries wolf, and how soon it finds a real step.

Synthetic stores judged the way `history changes` judges one call (fsbench.history.changes.judge: one test per
series, Benjamini–Hochberg across the store's series, history_min_change 5 %):

- false alarms: STORES stores of 50 flat series × 20 runs, with 3 % normal noise, with heavy-tailed noise
  (Student's t, 3 degrees of freedom, scaled by 3 %), and with normal noise of 1-6 % drawn for each series (the
  noise borrowed across series must not make alarms where series do not share one); a store with any alarm
  (regression, improvement or suspected) counts once. Target: at most 5 of 100 stores.
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

import functools
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
SPREAD = (0.01, 0.06)  # the noises of series that do not share one (log-uniform)
WOBBLE = (0.03, 0.12)  # the noise of series on a loaded machine: 12 % seen (tests/test_history_campaign.py)
EVAL_SEED, CHOOSE_SEED = 10_000, 0


def noise(rng, shape, heavy: bool) -> np.ndarray:
    return NOISE * (rng.standard_t(3, shape) if heavy else rng.standard_normal(shape))


def flat_store(rng, heavy: bool, spread: bool = False) -> bool:
    """Any alarm in a store of flat series; `spread`: each series' noise drawn between 1 and 6 % (SPREAD), not 3 %,
    so that borrowing the noise across series (changes.noise_prior) is judged where they do not share one."""
    values = 100 * np.exp(noise(rng, (SERIES, RUNS), heavy))
    if spread:
        values = 100 * (values / 100) ** (np.exp(rng.uniform(*np.log(SPREAD), (SERIES, 1))) / NOISE)
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


@functools.cache  # two rows ask for the same bound (a 10 % step, 3 runs after it)
def best_at_its_run(factor: float, after: int, before: int = RUNS, wobbly: bool = False, n: int = 200_000) -> float:
    """The share of such steps that any rule finds at exactly their run, at best: the rule that knows both levels
    and the noise and puts the cut where the likelihood is largest (the most probable run, given the values).
    Where a run's noise carries it past the midpoint between the levels, no rule can tell that run's side."""
    rng = np.random.default_rng(1)
    sigma = rng.uniform(*WOBBLE, (n, 1)) if wobbly else NOISE
    x = sigma * rng.standard_normal((n, before + after))
    d = np.log(factor)
    x[:, before:] += d
    llr = (x * d - d * d / 2) / sigma**2  # each run's log-likelihood ratio, after the step against before it
    after_k = np.cumsum(llr[:, ::-1], axis=1)[:, ::-1]  # [k]: the step at run k
    return float(np.mean(after_k[:, 1:].argmax(axis=1) + 1 == before))


def alone(rng, factor: float, after: int) -> bool:
    values = 100 * np.exp(noise(rng, RUNS + after, False))
    values[RUNS:] *= factor ** rng.choice([-1, 1])
    return any(c.index == RUNS and c.confirmed for c in changes.find(values))


def table(stores: int, seed: int) -> list[dict]:
    rows = []
    for name, heavy, spread in (
        ("flat, 3 % normal noise", False, False),
        ("flat, heavy-tailed noise (t3 × 3 %)", True, False),
        ("flat, normal noise of 1-6 % (each series its own)", False, True),
    ):
        rng = np.random.default_rng(seed)
        alarmed = sum(flat_store(rng, heavy, spread) for _ in range(stores))
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
            "best": best_at_its_run(1.1, 3),
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
                "best": best_at_its_run(factor, after, before, wobbly),
            }
        )
    return rows


def best_text(row: dict) -> str:
    return f"{row['best']:.1%}" if "best" in row else "—"


def markdown(rows: list[dict], stores: int, seed: int, seconds: float) -> str:
    lines = [
        "# make bench-history",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, {stores} stores per row, seeds from {seed} "
        f"(never used to choose a threshold), {seconds:.0f} s. Method: benchmarks/history.py's docstring and "
        "fsbench/history/changes.py's.",
        "",
        "| case | figure | share | best any rule can do | target | met |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {r['case']} | {r['figure']} | {r['value']:.1%} | {best_text(r)} | {r['target']} | "
        f"{'yes' if r['ok'] else 'NO'} |"
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
        "Reading it (2026-12-05, session 9). On the seeds the thresholds were chosen on (0-99, `--choose`) the same",
        "rows give 5, 5 and 3 stores, 869, 853, 994 and 1000 of 1000 steps.",
        "",
        "The 10 % step rows miss 90 %, and no rule can reach it (session 10). The column 'best any rule can do' is",
        "the rule that knows both levels and the noise and names the run most probable given the values (the most",
        "likely cut; 200,000 series, benchmarks/history.py best_at_its_run): no rule names the exact run more often.",
        "It finds 88.3 % of 10 % steps at 3 % noise with 3 runs after: in about 1 series in 9 the last run before",
        "the step or the first after it lies past the midpoint between the two levels, and then nothing in the",
        "values says which side it belongs to. fsbench's 87.9 % (in a store of 50, Benjamini-Hochberg across it)",
        "and 88.4 % (alone) are at that bound, within the sampling error of 1,000 steps (about a point), without",
        "knowing the levels or the noise. Session",
        "9's oracle reported 90.2 % with both levels known (3,000 steps, its script not kept): above what the most",
        "likely cut can reach, so it must have counted otherwise; it is not a bound.",
        "",
        "How it got there: each series' noise is moderated by the noise of the other series of the call",
        "(changes.noise_prior, limma's empirical Bayes). 20 runs say little about one series' noise: the 99th",
        "percentile of the largest t over the cuts of 23 runs is 3.9 with the noise estimated, 3.3 with it known.",
        "Without the moderation, at the same FDR 3 %, the store row is 759 of 1,000 (this table's seeds; at FDR 5 %,",
        "last session, 805). With it at FDR 5 % the store row is 882, but flat stores alarm in 7 of 100 (normal",
        "noise, and 1-6 % noise; this table's seeds): FDR went to 3 %, the largest in steps of 0.5 % with every flat",
        "row at most 5 of 100 on the choose seeds (3.5 %: 8 heavy-tailed), so 5, 5 and 3 there, at the target itself,",
        "not safely under it. A series judged alone has no other series to borrow from and only pays the lower FDR:",
        "895 -> 884 of 1,000. Where the series' noises differ the prior is weak (d0 ~3 for 1-6 %) and the test stays",
        "calibrated, if a little less strict: the 1-6 % row above; 200 stores of flat series at 1-6 % (seeds 70,000",
        "on) alarmed in 6 with it and 2 without (normal noise), 6 and 4 (t3 noise); 10 % steps at 3 % among them were",
        "found 801 against 746 of 1,000. Tried on top and not taken: the two-stage adaptive BH",
        "(Benjamini-Krieger-Yekutieli), 854 against 851 of 1,000 in stores at FDR 2.5 % (choose seeds), the two flat",
        "rows alike.",
        "",
        "Suspected after only 3 runs: 20 sigma of a noise from two differences was wrong both ways (479 of 1,000 3x",
        "steps at 3-12 % noise suspected, and 42 alarms on 4,000 flat series of 4 runs; choose seeds). With fewer",
        "than 6 runs before it, a step must now lie a factor SUSPECT_RATIO (2) off: 1,000 of 1,000, no alarm (a",
        "factor 2.5 found 971).",
        "",
        "From last session, still true: heavy-tailed noise sits near its target (BH alarms in ~FDR of all-flat stores",
        "whatever the null; min change filters normal noise more than heavy tails); a permutation null did not lower",
        "it. Of 1,000 10 % steps judged alone, 93 were cut one run early (or more) and 27 not significant; the cut is",
        "placed at its highest posterior (changes._max_t). A fourth run after the step does not find it more often at",
        "exactly its run (843 of 1,000 alone): the cut can then land late as well.",
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
