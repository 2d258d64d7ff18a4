#!/usr/bin/env bash
# Fine-tunes the hosted MLP (mlp.pt, as "classifier") with a Burn layer in front of it:
# examples/torch_finetune.
exec "$(dirname "${BASH_SOURCE[0]}")/../with-host.sh" mlp torch_finetune
