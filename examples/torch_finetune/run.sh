#!/usr/bin/env bash
# Fine-tunes the MLP defined in PyTorch (serve.py), served by the installed torchbridge as
# "classifier", with a Burn layer in front of it (main.rs). PYTHON: the python of the venv
# holding the wheel.
set -euo pipefail
exec "${PYTHON:-python3}" "$(dirname "${BASH_SOURCE[0]}")/serve.py"
