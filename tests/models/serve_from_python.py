"""Serves the test models of make_aoti_models.py with `torchbridge.serve` (the installed wheel's
Python package) and runs a Burn program against them: the interop suite `aoti_models`, whose host
is then this one (TB_AOTI_HOST), comparing each answer with the module run eagerly in torch here.

    python serve_from_python.py DIR CARGO_TEST_COMMAND...

DIR receives NAME.expected (the inputs and torch's outputs) and the packages serve() exports.
Exits with the Burn program's exit code.
"""

import os
import subprocess
import sys

import torchbridge

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_aoti_models import models, write_expected  # noqa: E402


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    table = models()
    for name, module, _, _, inputs in table:
        write_expected(out, name, module, inputs)
    with torchbridge.serve(
        models={name: module for name, module, _, _, _ in table},
        example_inputs={name: example for name, _, example, _, _ in table},
        dynamic_shapes={name: dyn for name, _, _, dyn, _ in table if dyn is not None},
        workdir=out,
    ) as server:
        print(f"torchbridge.serve: {server.address}, {server.signatures}", flush=True)
        env = dict(os.environ, TB_AOTI_MODELS=out, TB_AOTI_HOST=server.address)
        code = subprocess.call(sys.argv[2:], env=env)
    sys.exit(code)


if __name__ == "__main__":
    main()
