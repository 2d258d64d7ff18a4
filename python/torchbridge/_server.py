"""`serve`: a `torchbridge serve` child process hosting Torch models for Burn programs.

The host is a separate C++ process (LibTorch, no Python), so this module's job is supervision:
start it with the right `--model` options, learn its address from its start-up line, keep its
pipes drained, and make sure it never outlives the Python process that started it.

Why the pieces are as they are:

- The address comes from the first line `torchbridge serve` prints (`torchbridge 0.1.0 serving
  ... remote sessions on ws://127.0.0.1:40123 (...)`), as tests/interop/src/harness.rs reads it:
  with `--port 0` the kernel picks the port, and only the host knows which.
- The host logs (spdlog) to stdout, after its start-up text; stderr is mostly empty. Both pipes
  are read by background threads into one bounded deque: a pipe nobody reads fills up and blocks
  the host mid-log, and the deque keeps memory bounded however long it serves.
- `--exit-on-stdin-eof` with a stdin pipe only this process holds: when this process dies, even
  by SIGKILL, the pipe closes and the host stops itself. `weakref.finalize` (which also runs at
  interpreter exit) stops it on a normal exit or when the `Server` is garbage collected.
"""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import weakref

from ._binary import binary, environment
from ._export import export_as
from ._output import HostOutput


def _stop_process(process, stdin, timeout, tmpdir):
    """Stops the host: closes its stdin (its clean stop), SIGTERM, then SIGKILL after `timeout`
    seconds; then removes the folder of models exported for it. Module-level, holding no
    reference to the `Server`, so that `weakref.finalize` can call it."""
    if process.poll() is None:
        try:
            stdin.close()
        except OSError:
            pass
        try:
            process.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    else:
        try:
            stdin.close()
        except OSError:
            pass
    if tmpdir:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return process.returncode


class Server:
    """A running `torchbridge serve`. Made by `serve`; a context manager that stops it on exit.

    `address`: what a Burn program connects to (`ws://127.0.0.1:40123`); `port`; `signatures`:
    model name → its `forward` signature as the host read it (`forward(Tensor x) -> Tensor`);
    `formats`: model name → `TorchScript` or `AOTInductor`; `models`: name → the file served;
    `process`: the `subprocess.Popen`.
    """

    def __init__(self, process, models, tmpdir, startup_timeout):
        self.process = process
        self.models = dict(models)
        self.address = self.port = self.banner = None
        self._output = HostOutput(process, self.models)
        # The finalizer and the reader threads hold the process, never this object.
        self._finalizer = weakref.finalize(
            self, _stop_process, process, process.stdin, 10, tmpdir)
        try:
            self._output.wait_started(startup_timeout)
        except BaseException:
            self.stop()
            raise
        self.address = self._output.address
        self.port = self._output.port
        self.banner = self._output.banner
        # The reader's own dicts, which it keeps filling: a `Custom op` line the host prints
        # later still shows up.
        self.signatures = self._output.signatures
        self.formats = self._output.formats

    # Public ---------------------------------------------------------------------------------

    def logs(self):
        """What the host has written so far (its last 2000 lines, both streams): its log goes to
        stdout, after the start-up text."""
        return self._output.text()

    def running(self):
        """Whether the host process is still alive."""
        return self.process.poll() is None

    def wait(self, timeout=None):
        """Waits for the host to exit; returns its exit code (`subprocess.TimeoutExpired` after
        `timeout` seconds)."""
        return self.process.wait(timeout)

    def stop(self, timeout=10):
        """Stops the host (stdin closed, SIGTERM, SIGKILL after `timeout` s); returns its exit
        code. Safe to call more than once."""
        detached = self._finalizer.detach()  # (server, func, args, kwargs), or None if done
        if detached is not None:
            process, stdin, _, tmpdir = detached[2]
            _stop_process(process, stdin, timeout, tmpdir)
        self._output.join(5)
        return self.process.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def __repr__(self):
        state = "running" if self.running() else f"exited {self.process.returncode}"
        return f"<torchbridge.Server {self.address} {sorted(self.models)} ({state})>"


def _file_name(name):
    """A file name for model `name` (which may hold `/`, `@`, `:`)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "model"


def _check_name(name):
    if not isinstance(name, str) or not name or "=" in name:
        raise ValueError(f"model name {name!r}: a custom op id must be a non-empty string without '='")


def serve(models, example_inputs=None, *, port=0, host="127.0.0.1", devices=("cpu",),
          training=(), workdir=None, dynamic_shapes=None, extra_args=(), startup_timeout=120):
    """Serves `models` (name → `torch.nn.Module`, or the path of a `.pt`/`.pt2` file) as custom
    ops of a new `torchbridge serve`; returns its `Server` once it accepts Burn sessions.

    A module is exported first (into `workdir`, or a temporary folder removed at stop): as a
    TorchScript module when its name is in `training` (the host then serves `NAME::parameters`,
    `::backward`, ...) or when it has no `example_inputs[name]`, else as an AOTInductor package
    from `example_inputs[name]` (and `dynamic_shapes[name]`, if given). A path is served as is.

    `port=0` lets the kernel choose; `server.address` says which. `devices` are the host's
    `--device` values in order (Burn's device index is the position). `extra_args` go to
    `torchbridge serve` as they are (`("--threads", "2")`).

    Raises `ExportError` when a module cannot be exported (naming it), `ServeError` when the
    host exits before serving (its exit code and message: a port in use, a model it cannot
    load), `FileNotFoundError` for a path that does not exist.
    """
    example_inputs = example_inputs or {}
    dynamic_shapes = dynamic_shapes or {}
    training = set([training] if isinstance(training, str) else training)
    devices = [devices] if isinstance(devices, str) else list(devices)
    for name in models:
        _check_name(name)
    unknown = training.difference(models)
    if unknown:
        raise ValueError(f"training names {sorted(unknown)}, which are not among the models")
    for name, model in models.items():
        if isinstance(model, (str, os.PathLike)):
            path = os.fspath(model)
            if not os.path.isfile(path):
                raise FileNotFoundError(f"model {name!r}: no file at {path}")
            if name in training and path.endswith(".pt2"):
                raise ValueError(f"model {name!r}: {path} is an AOTInductor package, which the host "
                                 "serves for inference only; training needs a TorchScript module")

    tmpdir = None
    served = {}
    try:
        for name, model in models.items():
            if isinstance(model, (str, os.PathLike)):
                served[name] = os.path.abspath(os.fspath(model))
                continue
            if workdir is None and tmpdir is None:
                tmpdir = tempfile.mkdtemp(prefix="torchbridge-")
            folder = workdir if workdir is not None else tmpdir
            os.makedirs(folder, exist_ok=True)
            inputs = example_inputs.get(name)
            script = name in training or inputs is None
            path = os.path.join(os.path.abspath(folder), _file_name(name) + (".pt" if script else ".pt2"))
            served[name] = export_as(name, model, inputs, path, training=script,
                                     dynamic_shapes=dynamic_shapes.get(name))

        exe = binary()
        command = [exe, "serve", "--host", host, "--port", str(port)]
        for device in devices:
            command += ["--device", device]
        for name, path in served.items():
            command += ["--model", f"{name}={path}"]
        command += ["--exit-on-stdin-eof", *map(str, extra_args)]
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, close_fds=True, env=environment(exe))
    except BaseException:
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
        raise
    return Server(process, served, tmpdir, startup_timeout)
