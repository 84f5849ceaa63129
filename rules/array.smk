# The storage under test: attached before a cell is measured, released when the array is done.
# Attach is idempotent and its flag is temp(), one per cell, so adding a cell never re-measures others.

for target in TARGETS:

    rule:
        name:
            rule_name("attach", target)
        output:
            temp(state_file(target, "attached.json")),
        log:
            log_file("attach", target),
        priority: priority(target, 0)
        conda:
            "../envs/fsbench.yaml"
        resources:
            storage_io=1,
        params:
            array=array_spec,
            name=lambda wildcards: wildcards.array,
            workdir=workdir,
        script:
            "../scripts/attach.py"


rule release:
    input:
        array_reads,
    output:
        f"{RESULTS}/state/{{array}}/released.json",
    log:
        f"{RESULTS}/logs/release/{{array}}.log",
    conda:
        "../envs/fsbench.yaml"
    resources:
        storage_io=1,
    params:
        workdir=workdir,
    script:
        "../scripts/release.py"


onstart:
    hold_campaign_lock()


# Also when a run stops early, or only some targets were asked for: leave nothing attached or mounted.
onsuccess:
    release_all()


onerror:
    release_all()
