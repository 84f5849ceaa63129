"""A read through a filesystem client that caches data itself (ceph-fuse's client_oc) is flagged client-cache
unless the client says its cache is off or the read is of another host's data; its record says what the client
said. Asking a real ceph-fuse is in tests/test_slurm_shared.py."""

from fsbench.measurement.measure import _client_cached
from fsbench.storage import client_cache
from fsbench.toolkit.flags import CLIENT_CACHE, INVALIDATING

OFF = {"client": "ceph-fuse", "client_oc": False}
ON = {"client": "ceph-fuse", "client_oc": True}
UNASKED = {"client": "ceph-fuse", "client_oc": None, "why": "not asked"}


def record(flags=""):
    return {"row": {"flags": flags, "op": "read"}}


def test_only_a_read_of_this_host_s_data_through_a_cache_not_known_off_is_flagged():
    assert CLIENT_CACHE in INVALIDATING
    assert _client_cached(record("short"), ON, own_data=True)["row"]["flags"] == f"short;{CLIENT_CACHE}"
    assert _client_cached(record(), UNASKED, own_data=True)["row"]["flags"] == CLIENT_CACHE
    for client, own in ((OFF, True), (ON, False), (UNASKED, False)):
        done = _client_cached(record(), client, own_data=own)
        assert done["row"]["flags"] == "" and done["client_cache"] == client
    assert _client_cached(record(), None, own_data=True) == record()  # no client cache: the record as it was


def test_a_mix_flags_both_its_rows():
    rows = [{"flags": "", "op": "read"}, {"flags": "drop", "op": "write"}]
    done = _client_cached({"row": rows[0], "rows": rows}, ON, own_data=True)
    assert [r["flags"] for r in done["rows"]] == [CLIENT_CACHE, f"drop;{CLIENT_CACHE}"]


def test_a_filesystem_without_a_client_cache_says_none_and_a_client_not_found_says_why(tmp_path):
    assert client_cache.state("ext4", str(tmp_path)) is None
    assert client_cache.state("fuse.glusterfs", str(tmp_path)) is None
    found = client_cache.state(client_cache.CEPH_FUSE, str(tmp_path))  # no ceph-fuse serves this folder
    assert found["client_oc"] is None and "ceph-fuse processes of this mount namespace name" in found["why"]
    assert client_cache.unproven_cold(found, own_data=True)
