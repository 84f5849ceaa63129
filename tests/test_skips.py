"""Every skip goes through conftest.missing with a capability, so FSBENCH_REQUIRE turns it into a failure; the one
exception is a kernel condition (conftest.KERNEL_CONDITIONS), listed in README.md."""

import ast
from pathlib import Path

import pytest

import conftest
from conftest import CAPABILITIES, KERNEL_CONDITIONS, REPO, missing

TESTS = Path(__file__).parent


def calls(path: Path):
    """(line, what is called) of every call in a test file (decorators with arguments too), e.g. (27, 'pytest.skip')."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            yield node.lineno, ast.unparse(node.func)


def test_no_test_skips_past_fsbench_require():
    found = [
        f"{p.name}:{line}: {name}"
        for p in sorted(TESTS.glob("test_*.py"))
        for line, name in calls(p)
        if name in ("pytest.skip", "pytest.mark.skipif", "pytest.importorskip", "skip", "skipif")
    ]
    why = "skips that FSBENCH_REQUIRE cannot turn into failures (use conftest.missing):\n"
    assert not found, why + "\n".join(found)


def test_every_needs_mark_names_a_capability_and_every_kernel_condition_is_documented():
    named = {
        node.args[0].value
        for p in TESTS.glob("test_*.py")
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("mark.needs") and node.args
    }
    assert named and named <= set(CAPABILITIES), named - set(CAPABILITIES)
    readme = REPO.joinpath("README.md").read_text()
    assert all(f"`{c}`" in readme or c in readme for c in CAPABILITIES)
    assert all(f"kernel condition {name}" in readme for name in KERNEL_CONDITIONS)


@pytest.mark.parametrize("capability", ["peers", "thp", "dev_full"])
def test_a_required_capability_that_is_missing_fails(capability, monkeypatch):
    monkeypatch.setenv("FSBENCH_REQUIRE", capability)
    with pytest.raises(pytest.fail.Exception, match=f"{capability} is required"):
        missing(capability, "not here")
    monkeypatch.setenv("FSBENCH_REQUIRE", "")
    with pytest.raises(pytest.skip.Exception, match=f"{capability}: not here"):
        missing(capability, "not here")
    monkeypatch.setattr(conftest, "PEERS_TARBALL", Path("/nonexistent/ior.tar.gz"))
    monkeypatch.setattr(conftest, "thp_off", lambda: True)
    if capability != "dev_full":  # /dev/full cannot be taken away here
        assert conftest.why_missing(capability)
