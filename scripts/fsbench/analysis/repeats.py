"""Adaptive repeats: after each repeat of a cell, whether it needs another one, and why (scripts/decide.py)."""

import numpy as np
import pandas as pd

from fsbench.analysis.names import metric_name, p_text
from fsbench.analysis.stats import relative_ci
from fsbench.analysis.validity import NOT_COMPARABLE

# The verdicts that answer a comparison.
ANSWERS = ("faster", "slower")

# The figures a cell's repeats must pin down: both rates of a write, the rate of a read.
DECIDING = {"write": ["mb_s", "mb_s_durable"], "read": ["mb_s"]}


# What a decision keeps of each comparison it weighed (fsbench.analysis.compare.questions).
QUESTION_KEYS = ("a", "b", "op", "metric", "ratio", "p_value", "verdict", "open", "valid_a", "valid_b")


def _question_text(q: dict) -> str:
    """'ext4 vs xfs durable write: slower (p=0.002)'; 'ext4 vs xfs read: not comparable (ext4 not valid (short))'."""
    said = f"p={p_text(q['p_value'])}"
    if q["verdict"] == NOT_COMPARABLE:
        said = str(q.get("note", "")).split("; ")[0].removeprefix(f"{NOT_COMPARABLE}: ")
    return f"{q['a']} vs {q['b']} {metric_name(q['op'], q['metric'])}: {q['verdict']} ({said})"


def _listed(items: list[str], most: int = 3) -> str:
    more = f"; and {len(items) - most} more" if len(items) > most else ""
    return "; ".join(items[:most]) + more


def repeat_decision(rows: list[dict], plan: dict, questions: list[dict] | None = None) -> dict:
    """After len(rows)/2 repeats of a cell (its write and read rows): does it need another one?

    More, up to plan['max'] repeats, while any deciding figure's relative CI exceeds plan['target_ci'] (where
    given), and, with plan['decide'], while a comparison the cell is part of is open (`questions`, from
    fsbench.analysis.compare.questions: undecided, and decidable within max). The answer says why: which figure's CI,
    which comparison.
    """
    frame = pd.DataFrame(rows)
    k = int(frame["rep"].nunique())
    ci = {
        f"{op}.{col}": relative_ci(frame.loc[frame["op"] == op, col]) for op, cols in DECIDING.items() for col in cols
    }
    worst = max(ci, key=lambda name: np.nan_to_num(ci[name], nan=np.inf))
    target = plan["target_ci"]
    ci_met = target is None or all(v <= target for v in ci.values())  # NaN (e.g. a zero median) never meets it
    said = f"the widest 95% CI is {ci[worst]:.1%} of the median ({worst})"
    questions = questions or []
    undecided = [_question_text(q) for q in questions if q["open"]]
    wanted = ([said] if not ci_met else []) + undecided
    if wanted and k < plan["max"]:
        stopped, reason = "more", f"more: after {k} repeats, {_listed(wanted)}"
    elif wanted:
        stopped, reason = "max", f"max: {k} repeats, still {_listed(wanted)}"
    elif plan.get("decide"):
        # A comparison resting on a figure that is not valid is no answer, and more repeats cannot make it one.
        decided = [_question_text(q) for q in questions if q["verdict"] in ANSWERS]
        hopeless = [_question_text(q) for q in questions if q["verdict"] not in ANSWERS]
        if hopeless:
            stopped = "undecidable"
            reason = f"undecidable: after {k} repeats, not even {plan['max']} would decide {_listed(hopeless)}"
            reason += f"; decided: {_listed(decided)}" if decided else ""
        else:
            stopped = "decided"
            reason = f"decided: after {k} repeats, {_listed(decided) if decided else 'no comparison to make'}"
    else:
        stopped, reason = "target_ci", f"target_ci: {said} after {k} repeats"
    return {
        "repeats": k,
        "more": stopped == "more",
        "stopped": stopped,
        "reason": reason,
        "ci": ci,
        "questions": [{c: q.get(c) for c in QUESTION_KEYS} for q in questions],
        "plan": plan,
    }
