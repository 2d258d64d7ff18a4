"""What the examples' serve.py files share: serve one `torch.nn.Module` with the installed
torchbridge as the custom op "classifier", run a Burn example against it, stop the host.

An example's serve.py defines its module and calls `main`; so, for each example:

    python examples/torchscript/serve.py                # serve, run the Burn example, stop
    python examples/torchscript/serve.py --export m.pt  # only write the module (TorchScript),
    torchbridge serve --model classifier=m.pt           #   for the installed command to serve

The Burn example is a cargo example of tests/interop, run by scripts/cargo (its target directory
defaults to ~/.cache/torchbridge/cargo-target, shared with the project's other cargo commands);
TB_JOBS, where set, limits the jobs that build it.
"""

import argparse
import os
import subprocess
import sys

try:
    import torchbridge
except ImportError:
    # The examples are for the installed wheel: say how to get it rather than show a traceback.
    sys.exit(f"{sys.executable} has no torchbridge: pip install dist/torchbridge-*.whl into its "
             "venv (scripts/wheel makes the wheel), or set PYTHON to a venv's python that has it")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = "classifier"  # the Burn examples' default TB_MODEL


def main(example, module, **serve_options):
    """Serves `module` as "classifier" (`torchbridge.serve(..., **serve_options)`), runs the Burn
    example `example` against it, stops the host and exits with the example's exit code. With
    `--export PATH`, only writes the module as TorchScript to PATH."""
    parser = argparse.ArgumentParser(
        description=f"examples/{example}: a Torch module served to a Burn program")
    parser.add_argument("--export", metavar="PATH.pt", help=(
        f"write the module (TorchScript) for `torchbridge serve --model {MODEL}=PATH.pt`; "
        "serve nothing"))
    args = parser.parse_args()
    if args.export:
        print(torchbridge.export(module, None, args.export, training=True))
        return
    jobs = ["-j", os.environ["TB_JOBS"]] if os.environ.get("TB_JOBS") else []
    command = [os.path.join(ROOT, "scripts", "cargo"), "run", "--release", "--locked", *jobs,
               "--manifest-path", os.path.join(ROOT, "tests", "interop", "Cargo.toml"),
               "--example", example]
    with torchbridge.serve(models={MODEL: module}, **serve_options) as host:
        print(f"torchbridge.serve: {host.address}, {MODEL}: {host.signatures[MODEL]}", flush=True)
        env = dict(os.environ, BURN_REMOTE_ADDRESS=host.address, TB_MODEL=MODEL)
        code = subprocess.call(command, env=env)
        if code != 0:
            # The host's side of a failure: a module that raised, an output it refused.
            print(f"the host's log:\n{host.logs()}", file=sys.stderr)
    sys.exit(code)
