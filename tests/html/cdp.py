"""cdp.py — drives Debian's headless Chromium through the DevTools protocol
over a pipe (--remote-debugging-pipe: no network, no extra packages), for
the HTML view's tests and benchmark.

    with Browser() as b:
        page = b.open("file:///tmp/view.html#t=1s", 1600, 1000)
        page.wait("window.mtReady")
        page.eval("mtResult")
        page.mouse(x, y)
        page.screenshot("out.png")

Browser() raises Unavailable when no Chromium can be started (tests exit 77);
Browser(nice=-10) runs it at a higher priority (root only), for benchmarks
on a machine that other work shares.
"""
import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--force-device-scale-factor=1", "--font-render-hinting=none",
         "--disable-features=Translate,MediaRouter", "--mute-audio",
         "--remote-debugging-pipe"]


class Unavailable(Exception):
    pass


class Error(Exception):
    pass


def find_chromium():
    for name in (os.environ.get("MT_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class Browser:
    def __init__(self, timeout=60, nice=0):
        exe = find_chromium()
        if not exe:
            raise Unavailable("no chromium found (apt-get install chromium)")
        self.profile = tempfile.mkdtemp(prefix="mt-chromium-")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()
        def fds():
            # dup2 onto itself keeps close-on-exec: clear it explicitly
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)
            if nice:
                os.nice(nice)
        try:
            self.proc = subprocess.Popen(
                [exe] + FLAGS + ["--user-data-dir=" + self.profile, "about:blank"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                preexec_fn=fds, close_fds=False)  # keeps 3 and 4 (Python's own fds do not leak)
        except OSError as e:
            raise Unavailable(str(e))
        os.close(to_child_r)
        os.close(from_child_w)
        self.timeout = timeout
        self.buf = b""
        self.next_id = 0
        self.events = []
        try:
            self.call("Browser.getVersion", timeout=20)
        except Error as e:
            self.close()
            raise Unavailable("chromium did not start: %s" % e)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            os.close(self.to_child)
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        os.close(self.from_child)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Error("timed out waiting for chromium")
            r, _, _ = select.select([self.from_child], [], [], left)
            if r:
                chunk = os.read(self.from_child, 1 << 20)
                if not chunk:
                    raise Error("chromium closed the pipe")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise Error("%s: %s" % (method, m["error"].get("message")))
                return m.get("result", {})
            self.events.append(m)

    def open(self, url, width, height):
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        page.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        page.call("Page.enable")
        page.call("Runtime.enable")
        page.call("Page.navigate", {"url": url})
        return page


class Page:
    def __init__(self, browser, session):
        self.b = browser
        self.session = session

    def call(self, method, params=None, timeout=None):
        return self.b.call(method, params, self.session, timeout)

    def eval(self, expr, timeout=None):
        """The value of a JavaScript expression (promises awaited)."""
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True}, timeout)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise Error("%s: %s" % (expr, d.get("exception", {}).get("description", d.get("text"))))
        return r["result"].get("value")

    def wait(self, expr, timeout=60):
        """Waits until expr exists on the page, then awaits it."""
        deadline = time.monotonic() + timeout
        probe = "(() => { try { return typeof (%s) !== 'undefined'; } catch (e) { return false; } })()"
        while self.eval(probe % expr) is not True:
            if time.monotonic() > deadline:
                raise Error("timed out waiting for " + expr)
            time.sleep(0.05)
        return self.eval(expr, timeout)

    def mouse(self, x, y, kind="mouseMoved", button="none"):
        self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": button,
                                               "clickCount": 1 if button != "none" else 0})

    def click(self, x, y):
        self.mouse(x, y)
        self.mouse(x, y, "mousePressed", "left")
        self.mouse(x, y, "mouseReleased", "left")

    def key(self, key):
        self.call("Input.dispatchKeyEvent", {"type": "keyDown", "key": key})
        self.call("Input.dispatchKeyEvent", {"type": "keyUp", "key": key})

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
