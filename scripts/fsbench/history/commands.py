"""What each `python -m fsbench history` command does (fsbench.history.cli parses the command line)."""

import pandas as pd

from . import changes as changes_mod
from . import points as points_mod
from . import report as report_mod
from . import store as store_mod


def _show(df) -> str:
    with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 250):
        return df.to_string(index=False) if len(df) else "(none)"


def _runs(args, where) -> int:
    print(_show(points_mod.runs(store_mod.load(where, args.timeout))))
    return 0


def _series(args, where) -> int:
    rows = store_mod.load(where, args.timeout)
    points = points_mod.points(rows)
    if args.series is None:
        if len(points) == 0:  # say why: a store of invalid runs only is not an empty store
            print("\n".join(["(none)", *points_mod.left_out_summary(points_mod.left_out(rows))]))
            return 0
        listed = points.groupby("series").agg(runs=("run", "nunique"), last=("started", "max")).reset_index()
        latest = points.sort_values("started").groupby("series").tail(1).set_index("series")
        listed["cell"] = [points_mod.label(latest.loc[s]) for s in listed["series"]]
        table = listed
    else:
        table = points[points["series"] == args.series].drop(columns=["context"])
        if table.empty:
            raise ValueError(f"no series '{args.series}' in the store (`history series` lists them)")
        table = table[["metric", "run", "started", "median", "low", "high", "n"]]
    if args.csv:
        table.to_csv(args.csv, index=False)
        print(f"written: {args.csv}")
    else:
        print(_show(table))
    return 0


def _changes(args, where) -> int:
    rows = store_mod.load(where, args.timeout)
    points, marks = points_mod.points(rows), store_mod.load_marks(where, args.timeout)
    found = changes_mod.analyse(points, marks, args.min_change)
    if args.csv:
        found.to_csv(args.csv, index=False)
        print(f"written: {args.csv} ({len(found)} change point(s))")
    brief = ["series", "host", "array", "target", "op", "block_size", "metric", "after_run", "ratio", "p_value"]
    print(_show(found[brief + ["verdict", "context_changed", "others"]]))
    gone = points_mod.left_out(rows)
    if len(gone):  # what no verdict could see, and why
        print("left out:\n" + "\n".join(f"  {line}" for line in points_mod.left_out_summary(gone)))
        print(_show(gone))
    short = changes_mod.untested(points, marks)
    if len(short):  # what the test could not judge yet, and why
        print("not tested:\n" + "\n".join(f"  {line}" for line in changes_mod.untested_summary(short)))
        print(_show(short))
    if args.fail_on and (found["verdict"] == args.fail_on).any():
        return 1
    return 0


def trends(where, out, title, min_change, timeout, series=None, files=True):
    """The trend page of the store's series (or of `series` only: a campaign's cells), judged as `history changes`
    judges them: every series of the store in one call (one noise prior, one Benjamini–Hochberg), so that a
    series' verdict is the same on every page and in changes.csv."""
    rows = store_mod.load(where, timeout)
    points, marks = points_mod.points(rows), store_mod.load_marks(where, timeout)
    found = changes_mod.analyse(points, marks, min_change)
    invalid, gone = points_mod.points(rows, invalid=True), points_mod.left_out(rows)
    short = changes_mod.untested(points, marks)
    judged = points["series"].nunique() if len(points) else 0
    if series is not None:
        points, invalid = (p[p["series"].isin(series)] if len(p) else p for p in (points, invalid))
        found, gone, short = (t[t["series"].isin(series)] for t in (found, gone, short))
    family = f"judged with all {judged} series of the store {store_mod.describe(where)}, as `history changes` judges"
    return report_mod.page(
        points, found, marks, out, title, files=files, invalid=invalid, left_out=gone, untested=short, family=family
    )


def _report(args, where) -> int:
    out = trends(where, args.output, f"fsbench history: {store_mod.describe(where)}", args.min_change, args.timeout)
    print(f"written: {out} and its plots in {out.parent / (out.stem + '-plots')}")
    return 0


def _mark(args, where) -> int:
    store_mod.mark(where, args.run, args.reason, args.timeout)
    print(f"marked: {args.run} starts a new baseline ({args.reason})")
    return 0


VERBS = {"runs": _runs, "series": _series, "changes": _changes, "report": _report, "mark": _mark}
