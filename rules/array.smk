# The storage under test: made and described once per host and array (prepare_array), released once
# every cell of the array on that host is measured (release), and released at the end of every run.


rule prepare_array:
    output:
        array_record(),
    log:
        f"{RESULTS}/logs/prepare_array/{{host}}/{{array}}.log",
    priority: PLAN.top_priority
    group:
        JOB_GROUP
    conda:
        "../envs/fsbench.yaml"
    resources:
        **DEVICE_RESOURCES,
        storage_io=1,
    params:
        spec=lambda wildcards: CAMPAIGN["arrays"][wildcards.array],
        array=lambda wildcards: wildcards.array,
        host=lambda wildcards: wildcards.host,
        workdir=workdir,
    script:
        "../scripts/prepare_array.py"


# Optional (config precondition): the whole array written passes times before its cells, so that a real device is
# measured in the state it reaches in use (SNIA's preconditioning), not fresh out of the box.
rule precondition:
    input:
        array=array_record(),
    output:
        precondition_record(),
    log:
        f"{RESULTS}/logs/precondition/{{host}}/{{array}}.log",
    priority: PLAN.top_priority
    group:
        JOB_GROUP
    conda:
        "../envs/fsbench.yaml"
    resources:
        **DEVICE_RESOURCES,
        storage_io=1,
    params:
        spec=CAMPAIGN["precondition"],
        array_spec=lambda wildcards: CAMPAIGN["arrays"][wildcards.array],
        array=lambda wildcards: wildcards.array,
        host=lambda wildcards: wildcards.host,
        workdir=workdir,
        log_interval=CAMPAIGN["io"].get("log_interval"),
    script:
        "../scripts/precondition.py"


rule release:
    input:
        lambda wildcards: cell_outputs(wildcards.host, wildcards.array)
        + io500_outputs(wildcards.host, wildcards.array),
    output:
        f"{RESULTS}/state/{{host}}/{{array}}/released.json",
    log:
        f"{RESULTS}/logs/release/{{host}}/{{array}}.log",
    group:
        ARRAY_GROUP
    conda:
        "../envs/fsbench.yaml"
    resources:
        **DEVICE_RESOURCES,
        storage_io=1,
    params:
        workdir=workdir,
    script:
        "../scripts/release.py"
