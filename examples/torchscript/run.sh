#!/usr/bin/env bash
# The affine module defined in PyTorch (serve.py), served by the installed torchbridge as
# "classifier" between Burn ops (main.rs). PYTHON: the python of the venv holding the wheel.
set -euo pipefail
exec "${PYTHON:-python3}" "$(dirname "${BASH_SOURCE[0]}")/serve.py"
