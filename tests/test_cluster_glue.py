"""rules/cluster.smk leans on Snakemake internals (no public API does what it needs). They are all in one place
there, written for one Snakemake version: on any other, this test says so, and which internals to check, before
a cluster run finds out (the Slurm tests exercise them: tests/test_slurm*.py)."""

import inspect
import re
from pathlib import Path

import snakemake
import snakemake.api  # noqa: F401  (snakemake.workflow can only be imported after it)
from snakemake.settings.types import GroupSettings
from snakemake.workflow import Workflow
from snakemake_interface_executor_plugins.executors.remote import RemoteExecutor
from snakemake_interface_executor_plugins.settings import ExecMode

CLUSTER = Path(__file__).parent.parent / "rules" / "cluster.smk"
# The internals rules/cluster.smk reads or writes: (what, how to find it in Snakemake).
INTERNALS = {
    "ExecMode.REMOTE": lambda: ExecMode.REMOTE,
    "workflow.exec_mode": lambda: Workflow.exec_mode,
    "workflow.non_local_exec": lambda: Workflow.non_local_exec,
    "workflow.global_resources": lambda: re.search(r"self\.global_resources\b", inspect.getsource(Workflow)).end(),
    "workflow.register_resource": lambda: Workflow.register_resource,
    "workflow.group_settings.group_components": lambda: GroupSettings.__dataclass_fields__["group_components"],
    "workflow.group_settings.overwrite_groups": lambda: GroupSettings.__dataclass_fields__["overwrite_groups"],
    # the status poll's sleep and what it reads: replaced by one that ends when shutdown clears `wait`
    "RemoteExecutor.sleep": lambda: inspect.getsource(RemoteExecutor.sleep).index("next_seconds_between_status_checks"),
    "RemoteExecutor.wait": lambda: re.search(r"self\.wait = False", inspect.getsource(RemoteExecutor)).end(),
    "RemoteExecutor.cancel": lambda: inspect.getsource(RemoteExecutor.cancel).index("self.cancel_jobs(active_jobs)"),
    # the poll's loop, copied with its first sleep interruptible: the same statements it was written from
    "RemoteExecutor._wait_for_jobs": lambda: [
        inspect.getsource(RemoteExecutor._wait_for_jobs).index(s)
        for s in ("init_seconds_before_status_checks", "self.active_jobs.clear()", "self.check_active_jobs(")
    ],
}


def written_for() -> str:
    return re.search(r'^SNAKEMAKE_WRITTEN_FOR = "([^"]+)"$', CLUSTER.read_text(), re.M).group(1)


def test_snakemake_is_the_version_the_cluster_glue_was_written_for():
    assert snakemake.__version__ == written_for(), (
        f"rules/cluster.smk was written for Snakemake {written_for()} and leans on its internals "
        f"({', '.join(INTERNALS)}); this is Snakemake {snakemake.__version__}. Check that each still does what "
        "the comments in rules/cluster.smk say (run tests/test_slurm*.py as root), then set SNAKEMAKE_WRITTEN_FOR "
        "there, and requirements.txt's pin, to the new version"
    )


def test_the_internals_are_there_and_used_nowhere_else():
    missing = []
    for name, find in INTERNALS.items():
        try:
            find()
        except (AttributeError, KeyError, ValueError) as e:
            missing.append(f"{name} ({e!r})")
    assert not missing, f"Snakemake {snakemake.__version__} lacks what rules/cluster.smk uses: {', '.join(missing)}"
    rules = CLUSTER.parent
    for path in [rules.parent / "Snakefile", *rules.glob("*.smk")]:
        if path != CLUSTER:
            text = path.read_text()
            used = [n for n in ("ExecMode", "group_settings", "register_resource", "global_resources") if n in text]
            used += ["RemoteExecutor"] if "RemoteExecutor" in text else []
            used += ["exec_mode"] if "workflow.exec_mode" in text else []
            used += ["non_local_exec"] if "non_local_exec" in text else []
            assert not used, f"{path.name} uses Snakemake internals {used}: they belong in rules/cluster.smk"
