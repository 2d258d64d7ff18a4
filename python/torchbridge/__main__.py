"""`python -m torchbridge ARGS...` and the wheel's console script `torchbridge`: the C++ binary
itself, replacing this Python process (`os.execv`), so signals, stdin, exit codes and process ids
are the binary's own. A supervisor that starts `torchbridge serve` through the console script
therefore talks to the host directly, with no Python process in between to outlive or swallow
anything.
"""

import os
import sys

from ._binary import binary, environment
from ._errors import TorchbridgeError


def main(argv=None):
    """Exec the `torchbridge` binary with `argv` (default: this process's arguments)."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        path = binary()
    except TorchbridgeError as e:
        sys.exit(f"torchbridge: {e}")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(path, [path, *args], environment(path))


if __name__ == "__main__":
    main()
