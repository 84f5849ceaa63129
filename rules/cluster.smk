# The cluster glue (fsbench.workflow.cluster): what every device step asks the scheduler for (nodes, tasks, its node,
# the io_<host>, shared_io and storage_io limits) and how steps are grouped into Slurm jobs. Snakemake's internals
# it leans on are fsbench.workflow.snakemake_internals'; profiles/slurm and docs/cluster.md say how it is used.
from fsbench.workflow import cluster as workflow_cluster
from fsbench.workflow import snakemake_internals

snakemake_internals.install_slurm_patches()  # a no-op but for the Slurm executor

DEVICE_RESOURCES = workflow_cluster.device_resources(CAMPAIGN)
JOB_GROUP = workflow_cluster.job_group(workflow)
ARRAY_GROUP = workflow_cluster.array_group(workflow, PLAN.adaptive)
workflow_cluster.declare_limits(workflow, CAMPAIGN)


resource_scopes:
    storage_io="local",
