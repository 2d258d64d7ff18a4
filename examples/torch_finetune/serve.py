"""examples/torch_finetune's host: a small MLP defined here in PyTorch, served by the installed
torchbridge as the custom op "classifier", which the Burn program main.rs fine-tunes with a Burn
layer in front of it (Burn's autodiff and optimizer, the host's autograd for the MLP).

    python examples/torch_finetune/serve.py                 # serve, run main.rs against it, stop
    python examples/torch_finetune/serve.py --export m.pt   # or only write the module, then
    torchbridge serve --model classifier=m.pt

examples/torch_finetune/run.sh runs the first with $PYTHON (the python of the venv holding the
wheel).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from with_host import main  # noqa: E402  (first: it says how to install torchbridge if missing)

import torch  # noqa: E402


def smooth(shape, phase):
    """Deterministic weights, not symmetric, so a swapped parameter changes every result:
    sin(0.37 i + phase) / 2 over the flat index i (the mlp of tests/backends/libtorch's modules)."""
    n = torch.Size(shape).numel()
    return (torch.arange(n, dtype=torch.float32) * 0.37 + phase).sin().mul(0.5).reshape(shape)


class Mlp(torch.nn.Module):
    """x [batch, 3] -> fc2(tanh(fc1(x))) [batch, 2]; its parameters, in the order Burn receives
    them: fc1.weight [4, 3], fc1.bias [4], fc2.weight [2, 4], fc2.bias [2]."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(3, 4)
        self.fc2 = torch.nn.Linear(4, 2)
        with torch.no_grad():
            for layer, phase in ((self.fc1, 0.1), (self.fc2, 0.7)):
                layer.weight.copy_(smooth(layer.weight.shape, phase))
                layer.bias.copy_(smooth(layer.bias.shape, phase + 1))

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


if __name__ == "__main__":
    # training: exported as TorchScript, the format whose parameters, functional forward and
    # backward the host serves (classifier::parameters, ...) for Burn to train through.
    main("torch_finetune", Mlp(), training=["classifier"])
