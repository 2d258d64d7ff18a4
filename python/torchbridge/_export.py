"""Writing a `torch.nn.Module` as a file `torchbridge serve --model NAME=PATH` loads.

Two formats, because the host offers different things for each (docs/torchscript.md,
docs/libtorch.md):

- an AOTInductor package (`.pt2`): compiled kernels, the format PyTorch recommends; inference
  only, fixed dtypes and shapes (a dimension made dynamic at export may vary within its range);
- a TorchScript module (`.pt`): deprecated by PyTorch, but the only format for which the host
  serves the training contract (`NAME::parameters`, `::functional`, `::backward`, `::spec`) and
  scalar arguments.

Both are written beside their destination and renamed over it, so a host (or a model repository
polling a folder) never reads half a file.
"""

import os
import uuid

from ._errors import ExportError


def _inputs(example_inputs):
    """A tuple of example inputs: one tensor alone is taken as a one-argument call."""
    import torch

    if example_inputs is None:
        return None
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    return tuple(example_inputs)


def _partial_path(path, suffix):
    """A unique path beside `path` ending in `suffix` (AOTInductor wants `.pt2` at the end)."""
    base = path[: -len(suffix)] if path.endswith(suffix) else path
    return f"{base}.partial-{os.getpid()}-{uuid.uuid4().hex[:8]}{suffix}"


class _EvalMode:
    """Puts a module in eval mode for the export and back as it was afterwards: the host runs
    modules in eval mode (dropout off, batch norm on running statistics), and an export should
    not change the caller's module behind its back."""

    def __init__(self, module):
        self.module = module
        self.was_training = getattr(module, "training", False)

    def __enter__(self):
        self.module.eval()
        return self.module

    def __exit__(self, *exc):
        self.module.train(self.was_training)


def _export_aoti(module, example_inputs, path, dynamic_shapes):
    import torch
    import torch._inductor

    with _EvalMode(module):
        program = torch.export.export(module, example_inputs, dynamic_shapes=dynamic_shapes)
    partial = _partial_path(path, ".pt2")
    try:
        torch._inductor.aoti_compile_and_package(program, package_path=partial)
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def _export_torchscript(module, example_inputs, path):
    """Scripting first: it keeps control flow and scalar parameters, which the host feeds from a
    custom op's scalars. Tracing, when scripting fails and example inputs exist, records the ops
    the example takes: fine for straight-line models, which is what most unscriptable ones are."""
    import torch

    try:
        scripted = torch.jit.script(module)
    except Exception as script_error:
        if example_inputs is None:
            raise
        try:
            with _EvalMode(module):
                scripted = torch.jit.trace(module, example_inputs)
        except Exception as trace_error:
            raise RuntimeError(
                f"torch.jit.script failed ({type(script_error).__name__}: {script_error}) and "
                f"so did torch.jit.trace ({type(trace_error).__name__}: {trace_error})"
            ) from trace_error
    partial = _partial_path(path, ".pt")
    try:
        torch.jit.save(scripted, partial)
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def export_as(name, module, example_inputs, path, *, dynamic_shapes=None, training=False):
    """`export`, with errors naming `name` (serve's model name) instead of the path."""
    path = os.fspath(path)
    suffix = ".pt" if training else ".pt2"
    if not path.endswith(suffix):
        what = "a TorchScript module (training=True)" if training else "an AOTInductor package"
        raise ValueError(f"model {name!r}: {what} is written to a path ending in {suffix}, not {path}")
    inputs = _inputs(example_inputs)
    if not training and inputs is None:
        raise ValueError(f"model {name!r}: an AOTInductor package needs example inputs")
    try:
        if training:
            _export_torchscript(module, inputs, path)
        else:
            _export_aoti(module, inputs, path, dynamic_shapes)
    except Exception as e:
        raise ExportError(name, e) from e
    return path


def export(module, example_inputs, path, *, dynamic_shapes=None, training=False):
    """Writes `module` where `torchbridge serve --model NAME=path` can serve it; returns `path`.

    `training=False`: an AOTInductor package (`path` ends in `.pt2`): `torch.export.export` of
    the module in eval mode on `example_inputs` (a tuple of tensors, or one tensor), with
    `dynamic_shapes` as torch.export takes it (`({0: torch.export.Dim("batch", min=2, max=64)},)`
    lets the first input's batch vary), compiled by `torch._inductor.aoti_compile_and_package`.
    Compiling takes tens of seconds on a small machine.

    `training=True`: a TorchScript module (`path` ends in `.pt`), scripted, or traced on
    `example_inputs` when scripting fails. Only these can be trained through the host.

    Raises `ExportError` (the path and torch's reason) when torch cannot export the module, and
    `ValueError` for a path with the wrong suffix.
    """
    return export_as(os.fspath(path), module, example_inputs, path,
                     dynamic_shapes=dynamic_shapes, training=training)
