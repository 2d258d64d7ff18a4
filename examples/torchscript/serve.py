"""examples/torchscript's host: an affine layer defined here in PyTorch, served by the installed
torchbridge as the custom op "classifier", which the Burn program main.rs calls between its own
ops and checks against the same math on Burn's CPU backend.

    python examples/torchscript/serve.py                 # serve, run main.rs against it, stop
    python examples/torchscript/serve.py --export m.pt   # or only write the module, then
    torchbridge serve --model classifier=m.pt

examples/torchscript/run.sh runs the first with $PYTHON (the python of the venv holding the wheel).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from with_host import main  # noqa: E402  (first: it says how to install torchbridge if missing)

import torch  # noqa: E402


class Affine(torch.nn.Module):
    """x [batch, 3] -> x @ weight + bias [batch, 2]. main.rs's reference run hard-codes these
    weights (exactly representable, so both sides compute the same numbers)."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.tensor([[1.0, -1.0], [0.5, 2.0], [-2.0, 0.25]]))
        self.bias = torch.nn.Parameter(torch.tensor([0.5, -1.0]))

    def forward(self, x):
        return torch.matmul(x, self.weight) + self.bias


if __name__ == "__main__":
    # No example inputs: serve exports the module as TorchScript, the format this example is about
    # (an AOTInductor package would take a C++ compiler and tens of seconds to compile).
    main("torchscript", Affine())
