"""Where a cell runs: hosts, their work folders, and the glue that places steps on cluster nodes."""
