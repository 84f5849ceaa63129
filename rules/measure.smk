# A cell's measurement: write (on the mounted filesystem, or on the bare array for raw and path
# targets), then read back what was written from a cache made cold. An all-hosts cell (a path array with
# all_hosts) runs each of the two on every host at once, one part per host started with srun; its figure
# is total bytes over the common wall time, each host's own figure kept beside it.


rule write:
    input:
        unpack(write_input),
    output:
        record=record_file("write"),
        ready=temp(state_file("write")),
    log:
        step_log("write"),
    priority: cell_priority
    group:
        JOB_GROUP
    conda:
        "../envs/fsbench.yaml"
    threads: THREADS
    resources:
        **DEVICE_RESOURCES,
        storage_io=1,
    params:
        cell=cell_spec,
        hosts=part_hosts,
        scratch=CAMPAIGN["scratch"],
    script:
        "../scripts/write.py"


rule read:
    input:
        write=record_file("write"),
        ready=state_file("write"),
    output:
        record_file("read"),
    log:
        step_log("read"),
    priority: cell_priority
    group:
        JOB_GROUP
    conda:
        "../envs/fsbench.yaml"
    threads: THREADS
    resources:
        **DEVICE_RESOURCES,
        storage_io=1,
    params:
        cell=cell_spec,
        hosts=part_hosts,
        scratch=CAMPAIGN["scratch"],
    script:
        "../scripts/read.py"


# A metadata cell (config metadata:): many small files created, stat'ed, read and deleted where the write of
# a block I/O cell would go (the mounted filesystem, or the path array), each phase a row of its record.
rule metadata:
    input:
        unpack(write_input),
    output:
        record_file("metadata"),
    log:
        step_log("metadata"),
    priority: cell_priority
    group:
        JOB_GROUP
    conda:
        "../envs/fsbench.yaml"
    threads: THREADS
    resources:
        **DEVICE_RESOURCES,
        storage_io=1,
    params:
        cell=cell_spec,
    script:
        "../scripts/metadata.py"


# Adaptive repeats (io.repeats: {min, max, target_ci, decide}): after rep k of a cell, decide whether it
# needs rep k+1 (with decide, weighing the cells it is compared with as far as they got). A checkpoint, so
# that the DAG grows by one repeat where (and only where) one is needed.
localrules:
    decide,
    repeats_done,


checkpoint decide:
    input:
        unpack(decision_records),
    output:
        f"{RESULTS}/repeats/{CELL}/after{{k}}.json",
    log:
        f"{RESULTS}/logs/decide/{CELL}/after{{k}}.log",
    priority: PLAN.top_priority + 1
    conda:
        "../envs/fsbench.yaml"
    params:
        plan=PLAN.repeats,
    script:
        "../scripts/decide.py"


rule repeats_done:
    input:
        adaptive_records,
    output:
        f"{RESULTS}/repeats/{CELL}/done.json",
    log:
        f"{RESULTS}/logs/decide/{CELL}/done.log",
    conda:
        "../envs/fsbench.yaml"
    script:
        "../scripts/repeats_done.py"
