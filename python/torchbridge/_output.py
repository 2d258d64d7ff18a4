"""Reading a `torchbridge serve` process's output: its address, its models, its log.

Kept apart from `Server` on purpose: the reader threads hold this object and the process's
pipes, never the `Server`, so a `Server` nobody references any more can be garbage collected,
and its `weakref.finalize` can stop the host.

The host writes, in one flush, its start-up line (the address), two lines of advice, then one
`Custom op NAME: SIGNATURE (FORMAT)` line per model; after that its log (spdlog, on stdout too).
Both pipes are drained for the host's whole life into one bounded deque, so that neither ever
fills and blocks the host, and memory stays bounded however long it serves.
"""

import collections
import re
import subprocess
import threading
import time

from ._errors import ServeError

_ADDRESS = re.compile(r"\b(wss?://\S+)")
_SIGNATURE = re.compile(r"(.*) \(([^()]*)\)")
_LOG_PREFIX = re.compile(r"^\[[^\]]*\] \[(\w+)\] ")  # spdlog's "[2026-12-06 05:33:12.121] [error] "
LOG_LINES = 2000


class HostOutput:
    """What a host process has said so far; `wait_started` blocks until it says where it is."""

    def __init__(self, process, model_names):
        self.process = process
        self.model_names = list(model_names)
        self.address = None
        self.port = None
        self.banner = None
        self.signatures = {}
        self.formats = {}
        self.lines = collections.deque(maxlen=LOG_LINES)
        self.changed = threading.Condition()
        self.stdout_done = False
        self.readers = [
            threading.Thread(target=self._read_stdout, name="torchbridge-stdout", daemon=True),
            threading.Thread(target=self._read_stderr, name="torchbridge-stderr", daemon=True),
        ]
        for t in self.readers:
            t.start()

    def _read_stdout(self):
        stream = self.process.stdout
        for raw in iter(stream.readline, b""):
            line = raw.decode(errors="replace").rstrip("\r\n")
            with self.changed:
                self.lines.append(line)
                if self.address is None:
                    match = _ADDRESS.search(line) if " serving " in line else None
                    if match:
                        self.address = match.group(1).rstrip(",;/")
                        self.port = int(self.address.rsplit(":", 1)[1])
                        self.banner = line
                elif line.startswith("Custom op "):
                    self._add_signature(line[len("Custom op "):])
                self.changed.notify_all()
        stream.close()
        with self.changed:
            self.stdout_done = True
            self.changed.notify_all()

    def _read_stderr(self):
        stream = self.process.stderr
        for raw in iter(stream.readline, b""):
            with self.changed:
                self.lines.append(raw.decode(errors="replace").rstrip("\r\n"))
        stream.close()

    def _add_signature(self, text):
        """`NAME: SIGNATURE (FORMAT)`. The names served are tried first, longest first, since a
        name may itself contain `: `."""
        for name in sorted(self.model_names, key=len, reverse=True):
            if text.startswith(name + ": "):
                break
        else:
            name = text.split(": ", 1)[0]
        rest = text[len(name) + 2:]
        match = _SIGNATURE.fullmatch(rest)
        self.signatures[name] = match.group(1) if match else rest
        if match:
            self.formats[name] = match.group(2)

    def wait_started(self, timeout):
        """Returns once the address and every model's signature are read. Raises `ServeError`
        when the host exits first (its exit code and last lines) or `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while not (self.address is not None
                       and all(n in self.signatures for n in self.model_names)):
                left = deadline - time.monotonic()
                if self.stdout_done or left <= 0:
                    break
                self.changed.wait(min(left, 0.5))
            if self.address is not None:
                return
        if self.stdout_done:
            try:
                code = self.process.wait(10)
            except subprocess.TimeoutExpired:
                code = None
            self.readers[1].join(5)  # the rest of stderr, for the message
            tail = self.tail()
            raise ServeError(
                f"torchbridge serve exited with code {code} before serving: "
                f"{tail or '(no output)'}", returncode=code, output=tail)
        tail = self.tail()
        raise ServeError(
            f"torchbridge serve printed no address within {timeout} s; stopping it. "
            f"Output so far: {tail or '(none)'}", returncode=None, output=tail)

    def text(self):
        with self.changed:
            return "\n".join(self.lines)

    def tail(self, lines=20):
        """The last lines, spdlog's time stamps dropped (`error: cannot listen on ...`)."""
        with self.changed:
            last = list(self.lines)[-lines:]
        return "\n".join(_LOG_PREFIX.sub(lambda m: m.group(1) + ": ", l) for l in last).strip()

    def join(self, timeout):
        for t in self.readers:
            t.join(timeout)
