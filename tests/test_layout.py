"""A path array's striping layout (arrays.<name>.layout): refused up front where the filesystem cannot take it or
the values cannot go together, absent from every path array that does not give one (so no finished cell's params
change). Applied and read back on a real CephFS: tests/test_slurm_shared.py -k ceph."""

import pytest

from fsbench.campaign.config import ConfigError, validate
from fsbench.storage import layout

from conftest import REPO  # noqa: F401 (scripts/ on the path)

KiB, MiB = 2**10, 2**20


def path_array(**spec) -> dict:
    return {"campaign": "t", "arrays": {"p": {"kind": "path", "path": "/tmp", **spec}}, "raw": False}


def test_a_path_array_without_a_layout_has_none():
    assert validate(path_array())["arrays"]["p"] == {"kind": "path", "path": "/tmp", "all_hosts": False}


@pytest.mark.parametrize(
    "given, fs_type, why",
    [
        ({"stripe_count": 2}, "ext4", "a layout only where the path lies on CephFS or Lustre (this one is on ext4)"),
        ({"stripe_unit": 96 * KiB}, "fuse.ceph-fuse", "a stripe_unit that is a multiple of 64KiB (got 98304 bytes)"),
        (
            {"stripe_unit": 3 * 64 * KiB, "object_size": MiB},
            "ceph",
            "an object_size that is a multiple of stripe_unit (1048576 is not a multiple of 196608)",
        ),
        ({"object_size": 4 * MiB}, "lustre", "stripe_unit and stripe_count on Lustre (object_size is CephFS's)"),
        ({"stripe_unit": 64 * KiB, "stripe_count": 2, "object_size": MiB}, "fuse.ceph-fuse", None),
    ],
)
def test_what_a_filesystem_can_take(given, fs_type, why):
    assert layout.problem(given, fs_type) == why


def test_a_layout_where_the_path_is_no_cephfs_is_refused_in_one_line():
    with pytest.raises(ConfigError) as e:
        validate(path_array(layout={"stripe_unit": "1MiB", "stripe_count": 4}))
    (line,) = str(e.value).splitlines()
    assert line.startswith("config key 'arrays.p.layout': value ") and "CephFS or Lustre (this one is on" in line


@pytest.mark.parametrize(
    "given, said",
    [
        ({"stripe_unit": "lots"}, "'arrays.p.layout.stripe_unit': value 'lots'"),
        ({"stripe_count": 0}, "arrays.p.layout.stripe_count"),
        ({"stripes": 2}, "stripes"),
        ({}, "arrays.p.layout"),
    ],
)
def test_bad_layout_values_name_their_key(given, said):
    with pytest.raises(ConfigError, match=said.replace(".", r"\.")):
        validate(path_array(layout=given))
