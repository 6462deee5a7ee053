"""The HTML report in a real browser: Chromium renders it with no console error and draws every figure.

Chromium (Debian's ``chromium`` package) is driven over the DevTools protocol
on loopback with a minimal WebSocket client written here (RFC 6455: the
handshake, masked client frames, unmasked server frames), so the test needs no
Python package beyond the standard library. A screenshot of the whole page is
saved under the test's ``tmp_path``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import shutil
import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.test_report import write_sweep

from gpureplay.report import build_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)"
)

#: Browser flags: headless, no sandbox (we run as root in CI), and nothing that reaches the network.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)

_WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

#: What the page reports about itself once loaded.
_PAGE_STATE = """JSON.stringify({
  title: document.title,
  tables: document.querySelectorAll("table").length,
  images: Array.from(document.images).map(i => ({
    alt: i.alt, complete: i.complete, width: i.naturalWidth, height: i.naturalHeight})),
  width: document.documentElement.scrollWidth,
  height: document.documentElement.scrollHeight,
})"""


class DevTools:
    """A DevTools protocol session over one WebSocket (text frames, JSON messages)."""

    def __init__(self, port: int, path: str, timeout: float = 30.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        self.buffer = bytearray()
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, _, rest = bytes(self.buffer).partition(b"\r\n\r\n")
        self.buffer = bytearray(rest)
        accept = base64.b64encode(hashlib.sha1((key + _WS_GUID).encode()).digest()).decode()
        assert head.startswith(b"HTTP/1.1 101"), head
        assert f"sec-websocket-accept: {accept}".lower().encode() in head.lower(), head
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("DevTools connection closed")
        self.buffer += chunk

    def _take(self, n: int) -> bytes:
        while len(self.buffer) < n:
            self._fill()
        out = bytes(self.buffer[:n])
        del self.buffer[:n]
        return out

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        size = len(payload)
        if size < 126:
            header = struct.pack("!BB", 0x80 | opcode, 0x80 | size)
        elif size < 1 << 16:
            header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, size)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, size)
        mask = os.urandom(4)
        masked = (np.frombuffer(payload, np.uint8) ^ np.resize(np.frombuffer(mask, np.uint8), size)).tobytes()
        self.sock.sendall(header + mask + masked)

    def _receive(self) -> dict[str, Any]:
        message = bytearray()
        while True:
            first, second = self._take(2)
            opcode, size = first & 0x0F, second & 0x7F
            if size == 126:
                (size,) = struct.unpack("!H", self._take(2))
            elif size == 127:
                (size,) = struct.unpack("!Q", self._take(8))
            mask = self._take(4) if second & 0x80 else b""
            payload = self._take(size)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x8:
                raise ConnectionError("DevTools connection closed by the browser")
            if opcode == 0x9:
                self._send_frame(0xA, payload)
                continue
            if opcode in (0x0, 0x1):
                message += payload
                if first & 0x80:
                    decoded: dict[str, Any] = json.loads(message)
                    return decoded

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send a command and return its result; events that arrive meanwhile are kept."""
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self._send_frame(0x1, json.dumps(message).encode())
        while True:
            reply = self._receive()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float) -> dict[str, Any]:
        """Wait for an event (also one that already arrived)."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method:
                    return event
            seen = len(self.events)
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method} within {timeout} s")
            self.events.append(self._receive())

    def settle(self, seconds: float) -> None:
        """Keep reading events for a while (late console messages)."""
        self.sock.settimeout(0.1)
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                try:
                    self.events.append(self._receive())
                except TimeoutError:
                    continue
        finally:
            self.sock.settimeout(30.0)

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors (failed loads) seen so far."""
        found: list[str] = []
        for event in self.events:
            params = event.get("params", {})
            if event.get("method") == "Runtime.consoleAPICalled" and params.get("type") in (
                "error",
                "assert",
            ):
                found.append(
                    "console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
                )
            elif event.get("method") == "Runtime.exceptionThrown":
                found.append("exception: " + str(params["exceptionDetails"].get("text")))
            elif event.get("method") == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(f"log ({params['entry']['source']}): {params['entry']['text']}")
        return found


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevTools]:
    assert CHROMIUM is not None
    profile = tmp_path_factory.mktemp("chromium-profile")
    log = (profile.parent / "chromium.log").open("wb")
    proc = subprocess.Popen(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60.0
        while not (port_file.is_file() and len(port_file.read_text().splitlines()) >= 2):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"chromium did not start (exit {proc.poll()}); see {log.name}")
            time.sleep(0.1)
        port, path = port_file.read_text().splitlines()[:2]
        tools = DevTools(int(port), path)
        yield tools
        with contextlib.suppress(ConnectionError, OSError):
            tools.call("Browser.close")
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def open_page(tools: DevTools, url: str, width: int = 1280) -> tuple[str, dict[str, Any]]:
    """Open ``url`` in a new tab; return the tab's session and the page's state once loaded."""
    target = tools.call("Target.createTarget", url="about:blank")["targetId"]
    session = tools.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    for domain in ("Runtime", "Log", "Page"):
        tools.call(f"{domain}.enable", session)
    tools.call(
        "Emulation.setDeviceMetricsOverride",
        session,
        width=width,
        height=900,
        deviceScaleFactor=1,
        mobile=False,
    )
    tools.events.clear()
    tools.call("Page.navigate", session, url=url)
    tools.wait_for("Page.loadEventFired", 60.0)
    tools.settle(0.5)
    state = tools.call("Runtime.evaluate", session, expression=_PAGE_STATE, returnByValue=True)
    return session, json.loads(state["result"]["value"])


def test_report_renders_in_chromium_with_every_figure_drawn(browser: DevTools, tmp_path: Path) -> None:
    report = build_report([write_sweep(tmp_path / "runs")], tmp_path / "report")
    figures = sorted(p.name for p in report.parent.glob("*.png"))
    session, state = open_page(browser, report.resolve().as_uri())

    assert browser.errors() == []
    assert state["title"] == "gpureplay comparison report"
    # headline metrics, job outcomes, the real Philly cluster's queueing delays (Philly runs at 1x) and
    # change vs baseline
    assert state["tables"] == 4
    assert len(state["images"]) == len(figures) == 4
    for image in state["images"]:
        assert image["complete"] and image["width"] > 0 and image["height"] > 0, image

    shot = browser.call(
        "Page.captureScreenshot",
        session,
        format="png",
        captureBeyondViewport=True,
        clip={"x": 0, "y": 0, "width": state["width"], "height": min(state["height"], 8000), "scale": 1},
    )
    png = base64.b64decode(shot["data"])
    (tmp_path / "report-screenshot.png").write_bytes(png)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack("!II", png[16:24])
    assert width == state["width"] and height > 2000  # the whole page: tables and four figures


def test_harness_sees_console_errors_and_broken_images(browser: DevTools, tmp_path: Path) -> None:
    # The checks above must be able to fail: a page with a missing image and a console error.
    page = tmp_path / "broken.html"
    page.write_text(
        '<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body>'
        '<img src="missing.png" alt="gone"><script>console.error("boom")</script></body></html>'
    )
    _, state = open_page(browser, page.resolve().as_uri())
    errors = browser.errors()
    assert any("boom" in e for e in errors), errors
    assert any("missing.png" in e or "ERR_FILE_NOT_FOUND" in e for e in errors), errors
    assert state["images"] == [{"alt": "gone", "complete": True, "width": 0, "height": 0}]
