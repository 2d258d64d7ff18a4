"""What the tests share: the environment (the binary, one inductor compile worker), skips for
what is missing, and small helpers and modules.

Importing this first sets `TORCHBRIDGE_BIN` to the repository's build when it is unset and the
build exists, and puts `python/` on `sys.path`, so the suite runs from a checkout as it is.
With `TB_TEST_INSTALLED=1` it does neither: the suite then judges the installed wheel (its
package and the executable inside it), as scripts/test-wheel runs it.
"""

import os
import sys
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(PYTHON_DIR)
BUILT_BINARY = os.path.join(REPO, "build", "bridge", "cli", "torchbridge")

INSTALLED = os.environ.get("TB_TEST_INSTALLED") == "1"
if not INSTALLED and PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)
if not INSTALLED and not os.environ.get("TORCHBRIDGE_BIN") and os.path.isfile(BUILT_BINARY):
    os.environ["TORCHBRIDGE_BIN"] = BUILT_BINARY


def child_env():
    """The environment of a child Python that must import the same `torchbridge` as this one."""
    env = dict(os.environ)
    if not INSTALLED:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (PYTHON_DIR, os.environ.get("PYTHONPATH")) if p)
    return env


# One compile worker: the machines these run on are small and busy.
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

try:
    import torch
except ImportError:  # the package itself imports torch only when exporting
    torch = None

import torchbridge  # noqa: E402
from torchbridge import TorchbridgeError  # noqa: E402


def _binary_or_none():
    try:
        return torchbridge.binary()
    except TorchbridgeError:
        return None


BINARY = _binary_or_none()
NO_BINARY = ("no torchbridge binary: set TORCHBRIDGE_BIN or build the repository "
             f"({BUILT_BINARY} is missing)")
needs_torch = unittest.skipIf(torch is None, "torch is not installed")
needs_binary = unittest.skipIf(BINARY is None, NO_BINARY)


def alive(pid):
    """Whether process `pid` exists and is not a zombie (an orphan's zombie may linger where
    PID 1 does not reap, and it serves nothing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def healthz(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
        return r.read().decode().strip()


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))


if torch is not None:
    class Raises(torch.nn.Module):
        """Fails in forward: torch.export runs it, so the export fails."""

        def forward(self, x):
            raise RuntimeError("boom in forward")

    class Varargs(torch.nn.Module):
        """Not scriptable (varargs), traceable: the TorchScript export falls back to tracing."""

        def __init__(self):
            super().__init__()
            self.drop = torch.nn.Dropout(0.5)

        def forward(self, *xs):
            return self.drop(xs[0]) * 2

    class VarargsRaises(torch.nn.Module):
        """Neither scriptable nor traceable."""

        def forward(self, *xs):
            raise RuntimeError("boom while tracing")
else:
    Raises = Varargs = VarargsRaises = None
