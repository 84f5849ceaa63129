# One job per cell and repeat: set up the array (attach, mkfs, mount: each a no-op when the device
# already holds exactly that), write, make the cache cold, read back what was written. A cell is never
# split over jobs, so nothing can land on the device between its write and its read. Snakemake's log
# names each job's cell by its wildcards (host, array, target, test, rep).


rule measure:
    output:
        write=record_file("write"),
        read=record_file("read"),
    log:
        f"{RESULTS}/logs/measure/{CELL}/rep{{rep}}.log",
    wildcard_constraints:
        host=f"(?!{ALL_HOSTS}/){HOST}",
    priority: measure_priority
    conda:
        "../envs/fsbench.yaml"
    threads: lambda wildcards: int(wildcards.streams)  # one per stream (Slurm: --cpus-per-task)
    resources:
        storage_io=1,
        slurm_extra=pin_to_host,
    params:
        cell=cell_spec,
        workdir=workdir,
    script:
        "../scripts/measure.py"


# A path array with all_hosts: every host writes, then reads, at once (one part per host, started with
# srun); the figure is total bytes over the common wall time, each host's own figure kept beside it.
rule measure_all_hosts:
    output:
        write=record_file("write"),
        read=record_file("read"),
    log:
        f"{RESULTS}/logs/measure/{CELL}/rep{{rep}}.log",
    wildcard_constraints:
        host=ALL_HOSTS,
        target="path",
    priority: measure_priority
    conda:
        "../envs/fsbench.yaml"
    threads: lambda wildcards: int(wildcards.streams)
    resources:
        storage_io=1,
        nodes=len(CAMPAIGN["hosts"]),
        tasks=len(CAMPAIGN["hosts"]) or 1,  # one part per node: sbatch --ntasks (else Slurm gives one node)
        slurm_extra=pin_to_host,
    params:
        cell=cell_spec,
        hosts=CAMPAIGN["hosts"],
        scratch=CAMPAIGN["scratch"],
    script:
        "../scripts/measure_all_hosts.py"


# Adaptive repeats (io.repeats: {min, max, target_ci}): after rep k of a cell, decide whether it needs
# rep k+1. A checkpoint, so that the DAG grows by one repeat where (and only where) one is needed.
localrules:
    decide,
    repeats_done,


checkpoint decide:
    input:
        decision_records,
    output:
        f"{RESULTS}/repeats/{CELL}/after{{k}}.json",
    log:
        f"{RESULTS}/logs/decide/{CELL}/after{{k}}.log",
    priority: 100000
    conda:
        "../envs/fsbench.yaml"
    params:
        plan={"min": MIN_REPS, "max": MAX_REPS, "target_ci": TARGET_CI},
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
