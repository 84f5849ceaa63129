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


rule all:
    default_target: True
    input:
        final_outputs(),
