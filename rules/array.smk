# The storage under test: attached before a cell is measured, released when the array is done.
# Attach is idempotent and its flag is temp(), one per cell, so adding a cell never re-measures others.

for target in TARGETS:

    rule:
        name:
            rule_name("attach", target)
        output:
            temp(state_file(target, "attached.json")),
        params:
            array=array_spec,
            workdir=workdir,
        log:
            log_file("attach", target),
        resources:
            storage_io=1,
        priority: priority(target, 0)
        script:
            "../scripts/attach.py"


rule release:
    input:
        array_reads,
    output:
        f"{RESULTS}/state/{{array}}/released.json",
    params:
        workdir=workdir,
    log:
        f"{RESULTS}/logs/release/{{array}}.log",
    resources:
        storage_io=1,
    script:
        "../scripts/release.py"


# Also when a run stops early, or only some targets were asked for: leave nothing attached or mounted.
onsuccess:
    release_all()


onerror:
    release_all()
