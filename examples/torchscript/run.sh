#!/usr/bin/env bash
# The hosted affine module (affine.pt) as "classifier", between Burn ops: examples/torchscript.
exec "$(dirname "${BASH_SOURCE[0]}")/../with-host.sh" affine torchscript
