"""torchbridge from Python: serve Torch models to Burn programs.

`torchbridge serve` (C++, LibTorch) hosts Burn's remote sessions and serves TorchScript modules
and AOTInductor packages as custom ops that a Burn program calls between its own ops. This
package is the Python side of that: it writes a `torch.nn.Module` in a format the host loads
(`export`), starts and supervises a host serving it (`serve`), and says what a Burn program must
declare to call it (`describe`). The host runs no Python: what it loads is the exported file.

    server = torchbridge.serve({"classifier": model}, {"classifier": (torch.randn(8, 3),)})
    print(server.address)   # ws://127.0.0.1:40123: the Burn program's remote device
    server.stop()

`import torchbridge` does not import torch; the functions that need it import it when called,
so finding the binary (`python -m torchbridge ...`) stays fast.
"""

import os

from ._binary import binary, describe
from ._errors import ExportError, ServeError, TorchbridgeError
from ._export import export
from ._server import Server, serve

__version__ = "0.1.0"

# Where the wheel installs the C++ client's CMake package (lib/cmake/torchbridge), as
# torch.utils.cmake_prefix_path does for LibTorch: a C++ program configures with
# -DCMAKE_PREFIX_PATH=<this> and calls find_package(torchbridge) for torchbridge::client.
cmake_prefix_path = os.path.dirname(os.path.abspath(__file__))

__all__ = [
    "ExportError",
    "Server",
    "ServeError",
    "TorchbridgeError",
    "__version__",
    "binary",
    "cmake_prefix_path",
    "describe",
    "export",
    "serve",
    "torch_version",
]


def torch_version():
    """The version of the Python torch this package runs with (`torch.__version__`).

    A `.pt2` package is loaded by the host's LibTorch, which must be the version that made it;
    compare with the LibTorch that `torchbridge --version` names.
    """
    import torch

    return str(torch.__version__)
