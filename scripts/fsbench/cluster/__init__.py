"""Where a cell runs (hosts): which host a cell belongs to, its work folders there, whether hosts take turns,
and releasing a campaign on another node. The Slurm glue itself is fsbench.workflow.cluster (called from
rules/cluster.smk) and profiles/slurm."""
