#!/usr/bin/env bash
# with-host.sh MODULE EXAMPLE: builds torchbridge, writes the test TorchScript modules
# (tb_make_test_modules: modules built with LibTorch's C++ API, no Python), serves MODULE.pt as the
# custom op "classifier" on a free port, runs the Burn example EXAMPLE (a cargo example of
# tests/interop) against it, and stops the host. examples/*/run.sh call it.
set -euo pipefail
module="$1"
example="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TB_BUILD_DIR:-$root/build}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/torchbridge/cargo-target}"
TB_BUILD_DIR="$build" "$root/scripts/build" >&2
models="$(mktemp -d)"
log="$models/host.log"
trap 'kill "$host" 2>/dev/null || true; rm -rf "$models"' EXIT
"$build/tests/backends/libtorch/tb_make_test_modules" "$models" >/dev/null
"$build/bridge/cli/torchbridge" models "$models/$module.pt"
"$build/bridge/cli/torchbridge" serve --port 0 --log-level warn \
  --model "classifier=$models/$module.pt" >"$log" 2>&1 &
host=$!
for _ in $(seq 100); do
  grep -q 'ws://' "$log" 2>/dev/null && break
  kill -0 "$host" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.1
done
address="$(grep -o 'ws://[^ ]*' "$log" | head -1)"
head -n 4 "$log"
BURN_REMOTE_ADDRESS="$address" TB_MODEL=classifier \
  "$root/scripts/cargo" run --release --locked -j "${TB_JOBS:-1}" --manifest-path "$root/tests/interop/Cargo.toml" \
  --example "$example"
