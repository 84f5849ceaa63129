from snakemake.utils import min_version

min_version("9.0")


# A campaign given with --configfile stands alone: config/config.yaml is read only without one.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


report: "captions/workflow.rst"


include: "rules/common.smk"
include: "rules/cluster.smk"
include: "rules/array.smk"
include: "rules/filesystem.smk"
include: "rules/measure.smk"
include: "rules/analysis.smk"
include: "rules/io500.smk"


# What a real run does first and last (fsbench.workflow.hooks); a dry run runs none of them.
from fsbench.workflow import hooks


onstart:
    hooks.on_start(workflow, CAMPAIGN)


# Also when a run stops early, or only some targets were asked for: leave nothing attached or mounted.
onsuccess:
    hooks.release_all(CAMPAIGN, RESULTS)


onerror:
    hooks.on_error(workflow, config, CAMPAIGN, RESULTS)


rule all:
    default_target: True
    input:
        final_outputs(),
