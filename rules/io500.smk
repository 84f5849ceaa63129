# IO500's phases (config io500) on each target, in IO500's order, each its own rule and record: a phase
# waits for the one before it (the first for the target's mount, or the path array), every host of the cell
# running its processes at once (fsbench.io500). The chain of temp state files is the block I/O cells': a
# phase whose predecessor's state is gone (a release) is redone from mkfs.
for io500_phase in IO500_PHASES:

    rule:
        name:
            f"io500_{io500_phase.replace('-', '_')}"
        input:
            unpack(io500_input(io500_phase)),
        output:
            record=io500_record(io500_phase),
            ready=temp(io500_state(io500_phase)),
        log:
            f"{RESULTS}/logs/io500/{IO500_CELL}/{io500_phase}.log",
        priority: io500_priority
        group:
            ARRAY_GROUP
        conda:
            "../envs/fsbench.yaml"
        threads: IO500_THREADS
        resources:
            **DEVICE_RESOURCES,
            storage_io=1,
        params:
            cell=io500_cell,
            phase=io500_phase,
            hosts=part_hosts,
        script:
            "../scripts/io500.py"


rule io500_table:
    input:
        io500_records(),
    output:
        csv=report(
            f"{RESULTS}/io500.csv", caption="../captions/io500.rst", category="Tables"
        ),
        # per target io500's result_summary.txt and result.txt
        files=directory(f"{RESULTS}/io500"),
    log:
        f"{RESULTS}/logs/io500_table.log",
    conda:
        "../envs/fsbench.yaml"
    params:
        # the charts show the previous run of the campaign where the history store holds one
        store=CAMPAIGN["history"],
        timeout=CAMPAIGN["history_timeout"],
    script:
        "../scripts/io500_table.py"
