"""Finding the `torchbridge` executable, and the commands that only run it once.

The wheel puts the executable inside the package (`torchbridge/bin/torchbridge`) so that it
travels with the Python torch it was built against: a `.pt2` package made by one torch version
must be loaded by the same LibTorch. `TORCHBRIDGE_BIN` comes first so a developer's own build (or
a test's) wins over an installed wheel; `PATH` comes last, for a binary installed some other way.
"""

import importlib.util
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
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise TorchbridgeError(f"TORCHBRIDGE_BIN={env} is not an executable file")
        if not _is_launcher(env):
            return env
        # The wheel's own console script (`TORCHBRIDGE_BIN=$(which torchbridge)`) runs this
        # package again: the executable it stands for is the bundled one.
    bundled = os.path.join(_PACKAGE_DIR, "bin", "torchbridge")
    if os.path.isfile(bundled) and os.access(bundled, os.X_OK):
        return bundled
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        found = shutil.which("torchbridge", path=folder or os.curdir)
        if found and not _is_launcher(found):
            return found
    raise TorchbridgeError(
        "no torchbridge executable: install the torchbridge wheel (which carries one), build it "
        "from the repository (scripts/serve builds build/bridge/cli/torchbridge) and set "
        "TORCHBRIDGE_BIN to its path, or put one on PATH"
    )


def _is_launcher(path):
    """Whether `path` is a console script of this package (which would run `binary()` again)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError:
        return False
    return head.startswith(b"#!") and b"torchbridge" in head and b"import" in head


def environment(path):
    """The environment to run the executable at `path` in.

    The wheel's executable finds torch's libraries through its RPATH, `../../torch/lib` from its
    folder: torch installed in the same site-packages. Where torch sits elsewhere on `sys.path`
    (a venv reaching another's packages through a `.pth` file, `PYTHONPATH`), that folder is put
    on `LD_LIBRARY_PATH` for the child alone, found without importing torch (which takes seconds).
    """
    env = dict(os.environ)
    bin_dir = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(os.path.join(bin_dir, "..", "..", "torch", "lib")):
        return env
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        return env
    lib = os.path.join(os.path.dirname(spec.origin), "lib")
    if os.path.isdir(lib) and lib not in env.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (lib, env.get("LD_LIBRARY_PATH", "")) if p)
    return env


def describe(path):
    """`torchbridge models PATH`: the model's `forward` signature and what a Burn program must
    declare to call it (inputs in order, scalars, outputs, parameters, training ids).

    Raises `FileNotFoundError` for a missing file and `TorchbridgeError` with the host's message
    when it cannot read the model.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no model file at {path}")
    exe = binary()
    result = subprocess.run(
        [exe, "models", path],
        env=environment(exe),
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
