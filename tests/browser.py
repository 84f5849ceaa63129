"""A real headless Chromium driven over the Chrome DevTools Protocol, for the report test.

No extra package: Chromium speaks CDP over two pipes (--remote-debugging-pipe), JSON messages ended by a
NUL byte, read on its fd 3 and written on its fd 4. Clicks are real mouse events at an element's centre.
"""

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser() -> str | None:
    """The browser to use: $FSBENCH_BROWSER, else the first Chromium-like one on PATH."""
    if os.environ.get("FSBENCH_BROWSER"):
        return os.environ["FSBENCH_BROWSER"]
    return next((path for name in CANDIDATES if (path := shutil.which(name))), None)


class BrowserError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with one page. Use as a context manager: it is always stopped, and when the
    block fails it first saves a screenshot to `failure_shot`."""

    def __init__(
        self,
        executable: str,
        profile: Path,
        width: int = 1600,
        height: int = 1000,
        timeout: float = 30,
        failure_shot: Path | None = None,
    ):
        self.timeout = timeout
        self.failure_shot = failure_shot
        self.events: list[dict] = []
        self._next_id = 0
        self._buf = b""
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds_3_and_4():  # in the child: its fd 3 reads our commands, its fd 4 writes the answers
            high_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        argv = [
            executable,
            "--headless",
            "--no-sandbox",  # root, in a VM
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--mute-audio",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "--remote-debugging-pipe",
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            preexec_fn=fds_3_and_4,
            start_new_session=True,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        try:
            target = self.send("Target.createTarget", url="about:blank")["targetId"]
            self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network"):
                self.send(f"{domain}.enable", session=True)
            self.send(
                "Emulation.setDeviceMetricsOverride",
                session=True,
                width=width,
                height=height,
                deviceScaleFactor=1,
                mobile=False,
            )
        except BaseException:
            self.close()
            raise

    # -- the protocol ------------------------------------------------------------------------------
    def send(self, method: str, session: bool = False, **params) -> dict:
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_chrome], [], [], left)[0]:
                raise BrowserError(f"no answer from the browser within {self.timeout} s")
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise BrowserError(f"the browser closed its pipe (exit status {self.proc.poll()})")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def pump(self, seconds: float = 0.0) -> None:
        """Collect the events that arrive within `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                self.events.append(self._read(deadline))
            except BrowserError:
                if self.proc.poll() is not None:
                    raise
                return

    # -- the page --------------------------------------------------------------------------------
    def open(self, url: str) -> None:
        self.send("Page.navigate", session=True, url=url)
        self.wait_for("document.readyState === 'complete'")

    def js(self, expression: str):
        """The value of a JavaScript expression in the page (awaited if it is a promise)."""
        result = self.send(
            "Runtime.evaluate", session=True, expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:200]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def frames(self) -> list[dict]:
        """Every frame of the page (the page itself first, then its iframes): id, url, parentId."""
        found, todo = [], [self.send("Page.getFrameTree", session=True)["frameTree"]]
        while todo:
            node = todo.pop(0)
            found.append(node["frame"])
            todo += node.get("childFrames", [])
        return found

    def js_in_frame(self, frame_id: str, expression: str):
        """The value of `expression` in the document of frame `frame_id`, also for a frame of another origin
        (a data: URL): it runs in an isolated world of that frame, which sees the same DOM."""
        context = self.send("Page.createIsolatedWorld", session=True, frameId=frame_id, worldName="fsbench-test")
        result = self.send(
            "Runtime.evaluate",
            session=True,
            expression=expression,
            contextId=context["executionContextId"],
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:200]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float | None = None):
        """Poll `expression` until it is truthy; return its value."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            value = self.js(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for: {expression}")
            self.pump(0.1)

    def wait_for_value(self, probe, timeout: float | None = None):
        """Call `probe()` until it returns something truthy; return that."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            value = probe()
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {probe}")
            self.pump(0.1)

    def click(self, expression: str) -> None:
        """A real left click (mouse move, press, release) at the centre of the element `expression` gives."""
        box = self.wait_for(
            f"""(async () => {{
                const el = {expression};
                if (!el) return null;
                el.scrollIntoView({{block: "center", inline: "center"}});
                const frame = () => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
                await frame();
                const r = el.getBoundingClientRect();
                await frame();
                const again = el.getBoundingClientRect();
                // not while it moves (the report's navbar animates its width on every change of view)
                if (document.getAnimations().some(a => a.playState === "running")) return null;
                if (r.left !== again.left || r.top !== again.top || r.width !== again.width) return null;
                if (r.width === 0 || r.height === 0) return null;
                const x = r.left + r.width / 2, y = r.top + r.height / 2;
                const hit = document.elementFromPoint(x, y);
                return hit && (hit === el || el.contains(hit)) ? [x, y] : null;  // visible, not covered
            }})()"""
        )
        x, y = box
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            extra = {} if kind == "mouseMoved" else {"button": "left", "clickCount": 1}
            self.send("Input.dispatchMouseEvent", session=True, type=kind, x=x, y=y, **extra)

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", session=True, format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def errors(self) -> list[str]:
        """Uncaught exceptions, console.error calls and error log entries (e.g. a resource that failed)."""
        self.pump(0.2)
        found = []
        for ev in self.events:
            method, p = ev.get("method"), ev.get("params", {})
            if method == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                found.append(f"exception: {d.get('exception', {}).get('description') or d.get('text')}")
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                found.append("console.error: " + " ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif method == "Log.entryAdded" and p["entry"].get("level") == "error":
                found.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}".strip())
        return found

    def requests(self) -> list[str]:
        """Every URL the page asked for."""
        self.pump(0.2)
        return [ev["params"]["request"]["url"] for ev in self.events if ev.get("method") == "Network.requestWillBeSent"]

    # -- lifetime --------------------------------------------------------------------------------
    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    os.write(self._to_chrome, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
                except OSError:
                    pass
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, 9)  # its own session: the browser and its helpers only
                    self.proc.wait(timeout=10)
            deadline = time.monotonic() + 5  # and its helpers have gone too (killed if they linger)
            while time.monotonic() < deadline + 5:
                try:
                    os.killpg(self.proc.pid, 9 if time.monotonic() > deadline else 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
        finally:
            for fd in (self._to_chrome, self._from_chrome):
                try:
                    os.close(fd)
                except OSError:
                    pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is not None and self.failure_shot is not None and self.proc.poll() is None:
                self.screenshot(self.failure_shot)  # what the page showed when the check failed
        except (BrowserError, OSError):
            pass
        finally:
            self.close()
