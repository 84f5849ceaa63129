# The storage under test is set up inside each measurement (rules/measure.smk) by idempotent steps,
# and released here once every cell of an array on a host is measured.


rule release:
    input:
        array_outputs,
    output:
        f"{RESULTS}/state/{{host}}/{{array}}/released.json",
    log:
        f"{RESULTS}/logs/release/{{host}}/{{array}}.log",
    conda:
        "../envs/fsbench.yaml"
    resources:
        storage_io=1,
        slurm_extra=pin_to_host,
    params:
        workdir=workdir,
    script:
        "../scripts/release.py"


onstart:
    check_cluster_hosts()
    hold_campaign_lock()


# Also when a run stops early, or only some targets were asked for: leave nothing attached or mounted.
onsuccess:
    release_all()


onerror:
    release_all()
