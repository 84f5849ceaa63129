"""The engines: what moves a measurement's bytes (python with its C loop, fio, dd), the job they share, and the
metadata workload. registry names them; capabilities says what each can do, as data the config is checked against."""
