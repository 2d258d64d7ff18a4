#!/usr/bin/env python3
"""Makes the AOTInductor packages (.pt2) the tests serve, with torch.export and AOTInductor on the
CPU, using the Python torch of the wheel the build links (scripts/torch-env, the default build). Beside each
NAME.pt2 goes NAME.expected: the inputs the tests pass and what the model, run eagerly in this
torch, returns for them.

  make_aoti_models.py OUT_DIR

NAME.expected holds one tensor per line, `in|out DTYPE RANK DIMS... VALUES...`, space separated,
floats as the repr of their float32 value. tests/backends/libtorch/aoti_test.cpp and
tests/interop/tests/aoti_models.rs read it.
"""
import json
import os
import sys
import time
import zipfile

import torch


class Mlp(torch.nn.Module):
    """Two inputs, two outputs, weights as constants."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        with torch.no_grad():
            self.fc.weight.copy_(torch.arange(12, dtype=torch.float32).reshape(3, 4) / 8 - 0.6)
            self.fc.bias.copy_(torch.tensor([0.5, -0.25, 0.125]))

    def forward(self, x, y):
        return torch.relu(self.fc(x)) * y, x.sum(1)


class Scaled(torch.nn.Module):
    """A dynamic batch dimension (2 to 64) and a buffer."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor([2.0, -1.0, 0.5]))

    def forward(self, x):
        return torch.tanh(x) * self.scale + 1.0


class Lookup(torch.nn.Module):
    """An int64 input, and a float and an int64 output."""

    def __init__(self):
        super().__init__()
        self.table = torch.nn.Embedding(6, 2)
        with torch.no_grad():
            self.table.weight.copy_(torch.arange(12, dtype=torch.float32).reshape(6, 2) * 0.5)

    def forward(self, ids):
        return self.table(ids), ids * 2


def models():
    """(name, module, example inputs, dynamic shapes, the inputs the tests pass)."""
    x = torch.linspace(-1, 1, 8).reshape(2, 4)
    y = torch.linspace(0.5, 2, 6).reshape(2, 3)
    batch = torch.export.Dim("batch", min=2, max=64)
    ids = torch.tensor([5, 0, 3, 3])
    return [
        ("mlp", Mlp(), (x, y), None, (x, y)),
        ("scaled", Scaled(), (torch.zeros(4, 3),), ({0: batch},),
         (torch.linspace(-2, 2, 15).reshape(5, 3),)),
        ("lookup", Lookup(), (ids,), None, (ids,)),
    ]


def line(kind, t):
    values = t.flatten().tolist()
    text = [repr(float(v)) if t.is_floating_point() else str(int(v)) for v in values]
    return " ".join([kind, str(t.dtype).removeprefix("torch."), str(t.dim())]
                    + [str(d) for d in t.shape] + text)


def write_expected(out, name, module, inputs):
    """OUT/NAME.expected: `inputs` and the module's eager outputs for them, one line each."""
    module.eval()
    with torch.no_grad():
        results = module(*inputs)
    if isinstance(results, torch.Tensor):
        results = (results,)
    with open(os.path.join(out, f"{name}.expected"), "w") as f:
        for t in inputs:
            f.write(line("in", t) + "\n")
        for t in results:
            f.write(line("out", t) + "\n")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, module, example, dynamic, inputs in models():
        start = time.time()
        module.eval()
        program = torch.export.export(module, example, dynamic_shapes=dynamic)
        path = os.path.join(out, f"{name}.pt2")
        partial = os.path.join(out, f"{name}.partial.pt2")  # a reader never sees half a package
        torch._inductor.aoti_compile_and_package(program, package_path=partial)
        os.replace(partial, path)
        write_expected(out, name, module, inputs)
        print(f"{path}: {time.time() - start:.1f} s")
    retarget(os.path.join(out, "mlp.pt2"), os.path.join(out, "mlp_for_cuda.pt2"), "cuda")


def retarget(source, path, device):
    """A copy of the package at `source` whose metadata says it was compiled for `device`: what
    a package exported on another machine looks like to the host, which must refuse it."""
    partial = path + ".partial"
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(partial, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename.endswith("wrapper_metadata.json"):
                meta = json.loads(data)
                meta["AOTI_DEVICE_KEY"] = device
                data = json.dumps(meta).encode()
            dst.writestr(item, data)
    os.replace(partial, path)


if __name__ == "__main__":
    main()
