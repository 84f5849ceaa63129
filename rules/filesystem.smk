# A filesystem target's cell, before its write: make the filesystem on the array (mkfs), then mount it.
# Each step leaves a record (what it ran, what it found) and a state file for the next step; the state
# file is temp, so a step whose successor must run is run again first, in the same run. Each round
# (repeat) makes every filesystem afresh; the round's later cells of that filesystem find it as asked and
# reuse it, and their mkfs record says so.


rule mkfs:
    input:
        unpack(mkfs_input),
    output:
        record=record_file("mkfs"),
        ready=temp(state_file("mkfs")),
    log:
        step_log("mkfs"),
    wildcard_constraints:
        target="|".join(CAMPAIGN["filesystems"]) or "(?!)",
    priority: cell_priority
    group:
        JOB_GROUP
    conda:
        "../envs/fsbench.yaml"
    resources:
        **DEVICE_RESOURCES,
        storage_io=1,
    params:
        cell=device_spec,
    script:
        "../scripts/mkfs.py"


rule mount:
    input:
        mkfs=record_file("mkfs"),
        ready=state_file("mkfs"),
    output:
        record=record_file("mount"),
        ready=temp(state_file("mount")),
    log:
        step_log("mount"),
    priority: cell_priority
    group:
        JOB_GROUP
    conda:
        "../envs/fsbench.yaml"
    resources:
        **DEVICE_RESOURCES,
        storage_io=1,
    params:
        cell=device_spec,
    script:
        "../scripts/mount.py"
