import pytest

from fsbench.toolkit.sizes import format_size, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("512KiB", 512 * 1024),
        ("1MiB", 2**20),
        ("4M", 4 * 2**20),
        ("1GiB", 2**30),
        ("20G", 20 * 2**30),
        ("1048576", 2**20),
        (4096, 4096),
        ("2 GiB", 2 * 2**30),
        ("1mib", 2**20),
        ("3B", 3),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["0", 0, "-1M", "1.5Q", "1.5M", "lots", "", "M", "1iB", True, None, 1.5, [1]])
def test_parse_size_refuses(bad):
    with pytest.raises(ValueError):
        parse_size(bad)


@pytest.mark.parametrize(("n", "text"), [(2**20, "1MiB"), (4 * 2**20, "4MiB"), (512 * 1024, "512KiB"), (1000, "1000B")])
def test_format_size(n, text):
    assert format_size(n) == text
    assert parse_size(text) == n
