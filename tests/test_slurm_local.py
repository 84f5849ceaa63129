"""tools/slurm_local.py tells its own /etc/slurm/slurm.conf from another Slurm's, without starting Slurm:
SYSTEM_CONF points at a file under tmp_path, never at the real /etc/slurm. Also tools/cephfs_local.py's MDS setting
and the order its stop ends the daemons in, with nothing started."""

import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from conftest import REPO, slurm_cluster

sys.path.insert(0, str(REPO / "tools"))
import slurm_local  # noqa: E402

FOREIGN = "ClusterName=elsewhere\nSlurmctldHost=head01\n"


@pytest.fixture
def system_conf(tmp_path, monkeypatch):
    """Where slurm_local looks for the system's slurm.conf, here a path under tmp_path; nothing may be
    installed or started."""
    path = tmp_path / "etc" / "slurm" / "slurm.conf"
    path.parent.mkdir(parents=True)
    monkeypatch.setattr(slurm_local, "SYSTEM_CONF", path)

    def refuse(*args, **kwargs):
        raise AssertionError("slurm_local went on to install or start Slurm")

    monkeypatch.setattr(slurm_local, "install", refuse)
    return path


def own_conf(base):
    base.mkdir(parents=True, exist_ok=True)
    conf = base / "slurm.conf"
    conf.write_text(f"{slurm_local.MARK} (1 node(s))\nClusterName=fsbench\n")
    return conf


def test_a_foreign_file_is_refused_in_one_line_and_left_alone(system_conf, tmp_path):
    system_conf.write_text(FOREIGN)
    with pytest.raises(slurm_local.Unavailable) as refused:
        slurm_local.start(tmp_path / "slurm")
    said = str(refused.value)
    assert "\n" not in said and said.startswith(f"{system_conf} belongs to another Slurm"), said
    assert "did not write it" in said and "move it away" in said
    assert system_conf.read_text() == FOREIGN and not system_conf.is_symlink()
    assert not (tmp_path / "slurm").exists()  # refused before anything was made


def test_a_link_to_a_foreign_file_is_refused(system_conf, tmp_path):
    elsewhere = tmp_path / "other" / "slurm.conf"
    elsewhere.parent.mkdir()
    elsewhere.write_text(FOREIGN)
    system_conf.symlink_to(elsewhere)
    said = f"belongs to another Slurm .*it links to {re.escape(str(elsewhere))}"
    with pytest.raises(slurm_local.Unavailable, match=said):
        slurm_local.start(tmp_path / "slurm")
    assert system_conf.resolve() == elsewhere


@pytest.mark.parametrize("require", ["", "slurm"])
def test_the_tests_skip_with_that_reason_or_fail_where_slurm_is_required(system_conf, tmp_path, monkeypatch, require):
    system_conf.write_text(FOREIGN)
    monkeypatch.setenv("FSBENCH_REQUIRE", require)
    reason = f"no 1-node Slurm here: {system_conf} belongs to another Slurm"
    outcome = pytest.fail.Exception if require else pytest.skip.Exception
    with pytest.raises(outcome, match=re.escape(reason)):
        with slurm_cluster(tmp_path / "slurm"):
            pass


def test_a_conf_written_here_is_recognised_as_its_own(system_conf, tmp_path, monkeypatch):
    node = "NodeName=box CPUs=2 Boards=1 SocketsPerBoard=1 RealMemory=3900 UpTime=0-01:00:00\n"
    conf = tmp_path / "slurm" / "slurm.conf"
    conf.parent.mkdir()
    with monkeypatch.context() as m:  # `slurmd -C`, as if Slurm were installed
        m.setattr(subprocess, "run", lambda *a, **kw: SimpleNamespace(stdout=node, returncode=0))
        conf.write_text(slurm_local.config(conf.parent))
    slurm_local.claim_system_conf(conf)
    assert system_conf.resolve() == conf
    slurm_local.check_system_conf(conf)  # its own link, as start() finds it again
    slurm_local.release_system_conf(conf)
    assert not system_conf.exists() and not system_conf.is_symlink()


def test_links_left_by_an_earlier_start_are_replaced(system_conf, tmp_path):
    stale = own_conf(tmp_path / "earlier")  # its slurmctld is gone: no pid file
    system_conf.symlink_to(stale)
    conf = own_conf(tmp_path / "now")
    slurm_local.claim_system_conf(conf)
    assert system_conf.resolve() == conf
    system_conf.unlink()
    system_conf.symlink_to(tmp_path / "deleted" / "slurm.conf")  # its folder is gone
    slurm_local.claim_system_conf(conf)
    assert system_conf.resolve() == conf


def test_a_running_local_slurm_is_not_taken_over(system_conf, tmp_path):
    running = own_conf(tmp_path / "running")
    (running.parent / "slurmctld.pid").write_text("1\n")  # a live pid
    system_conf.symlink_to(running)
    with pytest.raises(slurm_local.Unavailable, match=re.escape(f"another local Slurm runs from {running.parent}")):
        slurm_local.claim_system_conf(own_conf(tmp_path / "now"))
    assert system_conf.resolve() == running


def test_the_clusters_sockets_fit_a_unix_socket_path_however_deep_its_folder():
    """CI's tmp folder made glusterd's socket path 107 bytes and slurmd's job step socket 130, past sun_path's 108:
    glusterd did not start, no job step could. Sockets (glusterd's, slurmd's spools, Ceph's admin sockets) live in
    a short run_dir in /run, one per cluster folder."""
    deep = slurm_local.Path("/tmp/pytest-of-root/pytest-166/popen-gw0") / ("x" * 200) / "cluster"
    sockets = re.findall(r"glusterd-sockfile (\S+)", slurm_local.glusterd_vol(deep / "gluster"))
    sockets += [str(slurm_local.run_dir(deep) / "spool-fsbench-n99" / "fsbench-n99_4294967295.4294967291")]
    sockets += [str(slurm_local.run_dir(deep) / "ceph" / "client.fsbench-n99.asok")]
    assert len(sockets) == 3 and all(len(s.encode()) < 108 and str(deep) not in s for s in sockets)
    assert slurm_local.run_dir(deep) != slurm_local.run_dir(deep.parent / "other")  # two clusters, two folders


def test_the_cephfs_mds_replies_once_journaled_and_is_killed_before_it_can_respawn(tmp_path, monkeypatch):
    """tools/cephfs_local.py: the MDS answers a request once it is in its journal (with early replies, another
    client's request for the same lock waited for the MDS's 5 s tick: 234 s for io500's mdtest-hard-delete with 4
    clients), and `stop` kills it (SIGKILL) after the clients are unmounted and before waiting for it: on SIGTERM
    its shutdown can take a failed journal write for being blocklisted and respawn as a new process. Nothing runs."""
    import cephfs_local

    conf = cephfs_local.conf(tmp_path, tmp_path / "run", "10.0.0.1")
    assert "mds early reply = false" in conf.split("[mds]")[1].split("[")[0]
    base, done = tmp_path / "cluster", []
    run = base / "run" / "ceph"
    run.mkdir(parents=True)
    (base / "ceph").mkdir()
    (base / "shared").write_text(str(tmp_path / "volume"))
    names = ["client.host", "client.fsbench-n2", "mds.a", "osd.0", "osd.1", "mgr.x", "mon.a"]
    for pid, name in enumerate(names, start=1000):
        (run / f"{name}.pid").write_text(f"{pid}\n")
    monkeypatch.setattr(cephfs_local, "run_dir", lambda b: b / "run" if b == base else None)
    monkeypatch.setattr(cephfs_local, "kill", lambda pid: done.append(("kill", pid)))
    monkeypatch.setattr(cephfs_local.subprocess, "run", lambda argv, **kw: done.append(tuple(argv)))
    in_node = lambda node: [] if node is None else [node]  # noqa: E731
    stopped = cephfs_local.stop(base, in_node, lambda pid: done.append(("end", pid)))
    assert stopped == [
        "client.fsbench-n2 (1001)", "client.host (1000)", "mds.a (1002)", "osd.0 (1003)", "osd.1 (1004)",
        "mgr.x (1005)", "mon.a (1006)",
    ]  # fmt: skip
    volume = str(tmp_path / "volume")
    assert done == [
        ("fsbench-n2", "umount", volume), ("end", 1001), ("fsbench-n2", "umount", "-l", volume),
        ("umount", volume), ("end", 1000), ("umount", "-l", volume),
        ("kill", 1002), ("end", 1002),  # the MDS killed, then waited for
        *[("end", pid) for pid in range(1003, 1007)],  # the OSDs, the mgr, the mon stopped
    ]  # fmt: skip
    assert not list(run.iterdir()) and not (base / "shared").exists()
