"""The engines: what moves a measurement's bytes (python with its C loop, fio, dd), the job they share, and the
metadata workload. table holds them: per engine its ops, what it cannot do, its method version; the config is
checked against it and every measurement dispatched through it."""
