# Each filesystem is made and mounted per cell by idempotent steps: a no-op when the device already
# holds that filesystem (same settings) mounted. There is no DAG edge between filesystems; their order
# on a device comes from priority() and the storage_io=1 limit in profiles/default.

for target in [t for t in TARGETS if t in CAMPAIGN["filesystems"]]:

    rule:
        name:
            rule_name("mkfs", target)
        input:
            state_file(target, "attached.json"),
        output:
            temp(state_file(target, "made.json")),
        log:
            log_file("mkfs", target),
        priority: priority(target, 1)
        conda:
            "../envs/fsbench.yaml"
        resources:
            storage_io=1,
        params:
            fs=fs_spec(target),
            workdir=workdir,
        script:
            "../scripts/mkfs.py"

    rule:
        name:
            rule_name("mount", target)
        input:
            state_file(target, "made.json"),
        output:
            temp(state_file(target, "mounted.json")),
        log:
            log_file("mount", target),
        priority: priority(target, 2)
        conda:
            "../envs/fsbench.yaml"
        resources:
            storage_io=1,
        params:
            fs=fs_spec(target),
            workdir=workdir,
        script:
            "../scripts/mount.py"
