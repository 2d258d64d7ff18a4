"""Finding the `torchbridge` executable, and the commands that only run it once.

The wheel puts the executable inside the package (`torchbridge/bin/torchbridge`) so that it
travels with the Python torch it was built against: a `.pt2` package made by one torch version
must be loaded by the same LibTorch. `TORCHBRIDGE_BIN` comes first so a developer's own build (or
a test's) wins over an installed wheel; `PATH` comes last, for a binary installed some other way.
"""

import os
import shutil
import subprocess

from ._errors import TorchbridgeError

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def binary():
    """The `torchbridge` executable to run.

    In order: env `TORCHBRIDGE_BIN`; `bin/torchbridge` inside this package (where the wheel puts
    it); `torchbridge` on `PATH`. Raises `TorchbridgeError` saying how to get one when none is
    found, or when `TORCHBRIDGE_BIN` names something that is not an executable file (a typo there
    should not silently fall through to another binary).
    """
    env = os.environ.get("TORCHBRIDGE_BIN")
    if env:
        if os.path.isfile(env) and os.access(env, os.X_OK):
            return env
        raise TorchbridgeError(f"TORCHBRIDGE_BIN={env} is not an executable file")
    bundled = os.path.join(_PACKAGE_DIR, "bin", "torchbridge")
    if os.path.isfile(bundled) and os.access(bundled, os.X_OK):
        return bundled
    found = shutil.which("torchbridge")
    if found:
        return found
    raise TorchbridgeError(
        "no torchbridge executable: install the torchbridge wheel (which carries one), build it "
        "from the repository (scripts/serve builds build/bridge/cli/torchbridge) and set "
        "TORCHBRIDGE_BIN to its path, or put one on PATH"
    )


def describe(path):
    """`torchbridge models PATH`: the model's `forward` signature and what a Burn program must
    declare to call it (inputs in order, scalars, outputs, parameters, training ids).

    Raises `FileNotFoundError` for a missing file and `TorchbridgeError` with the host's message
    when it cannot read the model.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no model file at {path}")
    result = subprocess.run(
        [binary(), "models", path],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        check=False,
    )
    out = result.stdout.decode(errors="replace")
    err = result.stderr.decode(errors="replace")
    if result.returncode != 0:
        raise TorchbridgeError(
            f"torchbridge models {path} failed (exit code {result.returncode}): "
            f"{(err or out).strip()}"
        )
    return out
