"""fsbench.workflow.snakemake_internals leans on Snakemake internals (no public API does what it needs). They are all
in that one module, written for one Snakemake version: on any other, this test says so, and which internals to check,
before a cluster run finds out (the Slurm tests exercise them: tests/test_slurm*.py). The Slurm patches change
nothing for any other executor; the cluster glue's resources are plain functions of the campaign."""

import asyncio
import inspect
import re
import time
from pathlib import Path
from types import SimpleNamespace

import snakemake
import snakemake.api  # noqa: F401  (snakemake.workflow can only be imported after it)
from snakemake.executors.local import Executor as LocalExecutor
from snakemake.settings.types import GroupSettings
from snakemake.workflow import Workflow
from snakemake_executor_plugin_slurm import Executor as SlurmExecutor
from snakemake_interface_executor_plugins.executors.remote import RemoteExecutor
from snakemake_interface_executor_plugins.settings import ExecMode

from fsbench.campaign.config import validate
from fsbench.workflow import cluster
from fsbench.workflow import snakemake_internals as internals

REPO = Path(__file__).parent.parent
MODULE = Path(internals.__file__)
# The internals the module reads or writes: (what, how to find it in Snakemake).
INTERNALS = {
    "ExecMode.REMOTE": lambda: ExecMode.REMOTE,
    "workflow.exec_mode": lambda: Workflow.exec_mode,
    "workflow.non_local_exec": lambda: Workflow.non_local_exec,
    "workflow.global_resources": lambda: re.search(r"self\.global_resources\b", inspect.getsource(Workflow)).end(),
    "workflow.register_resource": lambda: Workflow.register_resource,
    "workflow.group_settings.group_components": lambda: GroupSettings.__dataclass_fields__["group_components"],
    "workflow.group_settings.overwrite_groups": lambda: GroupSettings.__dataclass_fields__["overwrite_groups"],
    # the status poll's sleep and what it reads: replaced by one that ends when shutdown clears `wait`
    "RemoteExecutor.sleep": lambda: inspect.getsource(original("sleep")).index("next_seconds_between_status_checks"),
    "RemoteExecutor.wait": lambda: re.search(r"self\.wait = False", inspect.getsource(RemoteExecutor)).end(),
    "RemoteExecutor.cancel": lambda: inspect.getsource(original("cancel")).index("self.cancel_jobs(active_jobs)"),
    # the poll's loop, copied with its first sleep interruptible: the same statements it was written from
    "RemoteExecutor._wait_for_jobs": lambda: [
        inspect.getsource(original("_wait_for_jobs")).index(s)
        for s in ("init_seconds_before_status_checks", "self.active_jobs.clear()", "self.check_active_jobs(")
    ],
}
NAMES = ("ExecMode", "group_settings", "register_resource", "global_resources", "RemoteExecutor", "exec_mode")
NAMES += ("non_local_exec",)


def original(name):
    """RemoteExecutor's own method, patched or not."""
    method = getattr(RemoteExecutor, name)
    return getattr(method, "fsbench_original", method)


def test_snakemake_is_the_version_the_internals_were_written_for():
    assert snakemake.__version__ == internals.SNAKEMAKE_WRITTEN_FOR, (
        f"fsbench/workflow/snakemake_internals.py was written for Snakemake {internals.SNAKEMAKE_WRITTEN_FOR} and "
        f"leans on its internals ({', '.join(INTERNALS)}); this is Snakemake {snakemake.__version__}. Check that "
        "each still does what its docstrings say (run tests/test_slurm*.py as root), then set SNAKEMAKE_WRITTEN_FOR "
        "there, and requirements.txt's pin, to the new version"
    )


def test_the_internals_are_there_and_used_nowhere_else():
    missing = []
    for name, find in INTERNALS.items():
        try:
            find()
        except (AttributeError, KeyError, ValueError) as e:
            missing.append(f"{name} ({e!r})")
    assert not missing, f"Snakemake {snakemake.__version__} lacks what snakemake_internals.py uses: {missing}"
    code = [REPO / "Snakefile", *(REPO / "rules").glob("*.smk"), *(REPO / "scripts").rglob("*.py")]
    for path in code:
        if path != MODULE:
            used = [n for n in NAMES if re.search(rf"\b{n}\b", path.read_text())]
            assert not used, f"{path} uses Snakemake internals {used}: they belong in {MODULE.name}"


class QuietRemote(RemoteExecutor):
    """A remote executor that is not Slurm's, as far as the patched methods look (they read no more than this)."""

    def __init__(self, wait):
        self.wait = wait
        self.next_seconds_between_status_checks = 0.5

    def run_job(self, job): ...

    async def check_active_jobs(self, active_jobs):
        for job in active_jobs:
            yield job

    def cancel_jobs(self, active_jobs): ...


def slept(executor) -> float:
    start = time.monotonic()
    asyncio.run(executor.sleep())
    return time.monotonic() - start


def test_the_slurm_patches_change_no_other_executor():
    internals.install_slurm_patches()
    internals.install_slurm_patches()  # idempotent: not wrapped twice
    assert not hasattr(original("sleep"), "fsbench_original")
    assert internals.is_slurm(object.__new__(SlurmExecutor))
    assert not internals.is_slurm(QuietRemote(wait=True))
    # A local run's executor is no RemoteExecutor: it never meets a patched method.
    assert not issubclass(LocalExecutor, RemoteExecutor)
    # Another remote executor sleeps its whole sleep, even after shutdown cleared `wait`: Snakemake's own
    assert slept(QuietRemote(wait=False)) >= 0.5


def test_the_slurm_poll_sleep_ends_at_shutdown():
    class Stopped(SlurmExecutor):
        def __init__(self):
            self.wait = False
            self.next_seconds_between_status_checks = 30

    internals.install_slurm_patches()
    assert slept(Stopped()) < 5


def campaign(tmp_path, **extra):
    return validate(
        {
            "campaign": "c",
            "scratch": str(tmp_path),
            "arrays": {"shared": {"kind": "path", "path": str(tmp_path)}, "own": {"kind": "loop", "size": "1GiB"}},
            **extra,
        }
    )


def test_device_resources_pin_each_step_to_its_host(tmp_path):
    found = cluster.device_resources(campaign(tmp_path, hosts=["n1", "n2"], exclusive=True))
    on = SimpleNamespace(host="n2", array="own")
    assert found["slurm_extra"](on) == "--nodelist=n2 --exclusive"
    assert found["nodes"](on) == 1 and found["nodes"](SimpleNamespace(host="all")) == 2
    assert found["io_n1"](on) == 0 and found["io_n2"](on) == 1
    assert found["shared_io"](on) == 0 and found["shared_io"](SimpleNamespace(array="shared")) == 1
    assert cluster.limits(campaign(tmp_path, hosts=["n1", "n2"])) == ["storage_io", "shared_io", "io_n1", "io_n2"]
    assert list(cluster.device_resources(campaign(tmp_path))) == ["shared_io"]  # no hosts: nothing to pin


def test_the_release_and_io500_phases_join_the_group_the_profile_gives_their_arrays_write():
    """array_group (rules' `group:` for the release and io500's phases, which profiles/slurm does not name): the
    group of the array's write where the profile groups per host and array; none where it groups otherwise, groups
    nothing, or repeats are adaptive; the one group inside a group job."""

    def workflow(groups: dict, mode=ExecMode.DEFAULT):
        settings = SimpleNamespace(overwrite_groups=groups, group_components={"x": 1})
        return SimpleNamespace(exec_mode=mode, group_settings=settings)

    io500_phase = SimpleNamespace(host="all2x1", array="g", target="path")  # io500's wildcards: no rep
    profile = {"write": "fsbench-{host}-{array}", "read": "fsbench-{host}-{array}"}
    assert cluster.array_group(workflow(profile), adaptive=False)(io500_phase) == "fsbench-all2x1-g"
    assert cluster.array_group(workflow({}), adaptive=False)(io500_phase) is None
    per_round = workflow({"write": "fsbench-{host}-{array}-{rep}"})
    assert cluster.array_group(per_round, adaptive=False)(io500_phase) is None
    adaptive = workflow(profile)
    assert cluster.array_group(adaptive, adaptive=True)(io500_phase) is None
    assert adaptive.group_settings.group_components == {}  # nor does a later round's job span cells
    in_job = workflow({}, ExecMode.REMOTE)
    assert cluster.array_group(in_job, adaptive=False)(io500_phase) == cluster.GROUP
    # and the rules use it: the release's and every io500 phase's group
    for smk, rule in (("array.smk", "rule release:"), ("io500.smk", "rule:")):
        text = (REPO / "rules" / smk).read_text()
        assert re.search(r"group:\s+(\w+)", text[text.index(rule) :]).group(1) == "ARRAY_GROUP", smk
