"""The start line of an all-hosts cell's or io500 phase's parts (fsbench.toolkit.barrier): no part starts before
every part is ready, however late one is, and a part that dies before the line ends the wait."""

import sys
import threading
import time

from fsbench.toolkit import barrier

from conftest import REPO

# A part: says it is at the line (a file), waits there while told to (a file), then records when it went.
PART = """
import sys, time
from pathlib import Path
sys.path.insert(0, {scripts!r})
from fsbench.toolkit import barrier
port, name, folder = sys.argv[1:]
folder = Path(folder)
hold = folder / f"{{name}}.hold"
while hold.exists():
    time.sleep(0.01)
(folder / f"{{name}}.ready").touch()
went = barrier.wait(port)
(folder / f"{{name}}.went").write_text(repr(went))
"""


def parts_argv(tmp_path, names):
    script = tmp_path / "part.py"
    script.write_text(PART.format(scripts=str(REPO / "scripts")))
    # one shell runs every part at once, as srun does one per node
    line = " & ".join(f"{sys.executable} {script} $0 {n} {tmp_path}" for n in names) + " & wait"
    return lambda port: ["sh", "-c", line, port]


def test_no_part_goes_before_the_last_is_ready_and_all_go_together(tmp_path):
    names = ["a", "b", "late"]
    (tmp_path / "late.hold").touch()  # the late part is held before its line until the test lets it
    result = {}
    launcher = threading.Thread(
        target=lambda: result.update(done=barrier.run_parts(parts_argv(tmp_path, names), 3, {}))
    )
    launcher.start()
    while not ((tmp_path / "a.ready").exists() and (tmp_path / "b.ready").exists()):
        time.sleep(0.01)
    time.sleep(0.5)
    assert not list(tmp_path.glob("*.went")), "a part went before the late one was at the line"
    released = time.time()
    (tmp_path / "late.hold").unlink()
    launcher.join(60)
    assert result["done"].returncode == 0, result["done"].stderr
    went = [float((tmp_path / f"{n}.went").read_text()) for n in names]
    assert min(went) >= released
    assert max(went) - min(went) < 0.25  # one send after another: far less on an idle machine


def test_a_part_that_ends_before_the_line_ends_the_wait(tmp_path):
    argv = lambda port: ["sh", "-c", f"{sys.executable} -c 'raise SystemExit(3)'", port]  # noqa: E731
    started = time.monotonic()
    done = barrier.run_parts(argv, 2, {})
    assert done.returncode == 3 and time.monotonic() - started < 30
