# One write and the read of what it wrote, per cell. Each result is its own file, written atomically.

for target in TARGETS:

    rule:
        name:
            rule_name("write", target)
        input:
            ready_file(target),
        output:
            record_file(target, "write"),
        log:
            log_file("write", target),
        priority: priority(target, 3)
        conda:
            "../envs/fsbench.yaml"
        resources:
            storage_io=1,
        params:
            cell=cell_spec(target),
            workdir=workdir,
        message:
            f"write {target} on {{wildcards.array}}: {{wildcards.pattern}} bs={{wildcards.bs}} {{wildcards.io}} x{{wildcards.streams}} rep {{wildcards.rep}}"
        script:
            "../scripts/write.py"

    rule:
        name:
            rule_name("read", target)
        input:
            record_file(target, "write"),
        output:
            record_file(target, "read"),
        log:
            log_file("read", target),
        priority: priority(target, 4)
        conda:
            "../envs/fsbench.yaml"
        resources:
            storage_io=1,
        params:
            cell=cell_spec(target),
            workdir=workdir,
        message:
            f"read {target} on {{wildcards.array}}: {{wildcards.pattern}} bs={{wildcards.bs}} {{wildcards.io}} x{{wildcards.streams}} rep {{wildcards.rep}}"
        script:
            "../scripts/read.py"
