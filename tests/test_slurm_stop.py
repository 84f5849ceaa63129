"""Stopping a run that goes through profiles/slurm: SIGTERM (as `kill` or a batch system sends it) or Ctrl-C
(SIGINT to the terminal's process group) while a Slurm job writes. The run must cancel its Slurm jobs and exit
within STOP_S, holding nothing, and the same command then finishes the campaign."""

import os
import signal
import socket
import subprocess
import time

import pandas as pd
import pytest
import yaml

from conftest import (
    REPO,
    SLURM_PROFILE,
    SNAKEMAKE,
    held,
    needs_root,
    needs_throttle,
    private_scratch,
    run_campaign,
    slow_device,
    slurm_cluster,
    small_campaign,
)

pytestmark = [needs_root, needs_throttle, pytest.mark.e2e]
HERE = socket.gethostname()
STOP_S = 15


def squeue(env: dict) -> list[str]:
    out = subprocess.run(["squeue", "-h", "-o", "%i %T"], capture_output=True, text=True, env=os.environ | env)
    return out.stdout.split("\n")[:-1]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_cancels_the_slurm_jobs_in_time_and_the_same_command_finishes(tmp_path_factory, sig):
    base, work = tmp_path_factory.mktemp("slurm1"), tmp_path_factory.mktemp("stop")
    with (
        slurm_cluster(base, 1) as env,
        private_scratch() as scratch,
        private_scratch() as folder,
        slow_device(folder / "slow", 192 * 2**20, 2 * 10**6) as slow,  # 64 MiB: a 32 s write
    ):
        config = small_campaign(scratch, "stop", size="64MiB", direct=[True])
        config |= {"hosts": [HERE], "arrays": {"demo": {"kind": "device", "device": slow.dev}}}
        config["allow_destroy"] = [slow.dev]
        cfg = work / "campaign.yaml"
        cfg.write_text(yaml.safe_dump(config))
        argv = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "--cores", "2", *SLURM_PROFILE, "--configfile", str(cfg)]
        log = work / "run.log"
        with log.open("w") as out:
            run = subprocess.Popen(
                argv,
                cwd=work,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=os.environ | env,
                start_new_session=True,  # its own process group, as a terminal's foreground job
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            )
        try:
            deadline = time.monotonic() + 600
            while not list(scratch.rglob("fsbench-*.dat")):
                assert run.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.1)
            assert squeue(env), "no Slurm job while the write runs"
            sent = time.monotonic()
            if sig == signal.SIGINT:
                os.killpg(run.pid, sig)  # Ctrl-C reaches the whole foreground process group
            else:
                os.kill(run.pid, sig)
            try:
                run.wait(timeout=300)
            finally:
                took = time.monotonic() - sent
            left = squeue(env)
        finally:
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGKILL)
                run.wait()
        said = log.read_text()
        print(f"{sig.name}: exited {run.returncode} after {took:.1f} s; Slurm jobs left: {left}")
        assert run.returncode != 0 and took <= STOP_S, (took, said[-3000:])
        assert not left, (left, said[-3000:])
        assert not held(scratch), said[-3000:]
        slow.set_rate(0)
        done = run_campaign(work, config, *SLURM_PROFILE, env=env)
        assert not held(scratch)
    assert "Nothing to be done" not in done.stdout + done.stderr
    df = pd.read_csv(work / "results/stop/measurements.csv")
    assert sorted(df.op) == ["read", "write"] and (df.bytes == 64 * 2**20).all()
