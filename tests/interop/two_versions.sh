#!/usr/bin/env bash
# One torchbridge host, two Burn versions at once: starts `torchbridge serve` and runs the smoke
# suite of tests/interop (Burn 0.22.1, protocol 2) and of tests/interop-0.23 (Burn 0.23.0-pre.1,
# protocol 6) against it in parallel, both with their ignored case
# `shares_one_host_with_the_other_burn_version`, which waits until the other version's session is
# open on the same host and computes while both are. Fails if either suite fails.
# Usage: two_versions.sh <torchbridge> <0.22.1 Cargo.toml> <0.23 Cargo.toml>; CTest passes
# CARGO_TARGET_DIR and the cargo binary (TB_CARGO).
set -euo pipefail
bin="$1" old="$2" new="$3"
cargo="${TB_CARGO:-cargo}"

# Not a coproc: bash keeps a coproc's descriptors from subshells (the log reader could not read
# it) and holds its stdin open itself (the host would never see EOF). A fifo held by one descriptor
# here is the host's stdin: closing it stops the host.
dir="$(mktemp -d)"
mkfifo "$dir/in"
"$bin" serve --port 0 --exit-on-stdin-eof --log-level info <"$dir/in" >"$dir/log" 2>&1 &
host_pid=$!
exec {host_in}>"$dir/in"
log="$dir/log"
stop_host() {
  exec {host_in}>&-
  for _ in $(seq 1 50); do kill -0 "$host_pid" 2>/dev/null || break; sleep 0.1; done
  kill "$host_pid" 2>/dev/null || true
  wait "$host_pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap stop_host EXIT
address=""
for _ in $(seq 1 300); do
  address="$(grep -o 'ws://[^ ]*' "$log" | head -n 1 || true)"
  [ -n "$address" ] && break
  kill -0 "$host_pid" 2>/dev/null || break
  sleep 0.1
done
[ -n "$address" ] || { echo "two_versions: the host printed no address" >&2; cat "$log" >&2; exit 1; }
echo "two_versions: host at $address"

run() {  # manifest, peer protocol
  TB_HOST_ADDRESS="$address" TB_PEER_PROTOCOL="$2" \
    "$cargo" test --release --locked --manifest-path "$1" --test suites -- --include-ignored smoke::
}
run "$old" 6 >"$log.old" 2>&1 &
old_pid=$!
run "$new" 2 >"$log.new" 2>&1 &
new_pid=$!
rc=0
wait "$old_pid" || rc=1
wait "$new_pid" || rc=2
echo "== Burn 0.22.1 client"; cat "$log.old"
echo "== Burn 0.23.0-pre.1 client"; cat "$log.new"
rm -f "$log.old" "$log.new"
sleep 0.5
echo "== host"; grep -E "opened|refused|error" "$log" || true
for p in "Burn 0.22.1 (protocol 2)" "Burn 0.23.0-pre.1 (protocol 6)"; do
  grep -qF "$p" "$log" || { echo "two_versions: the host opened no session for $p" >&2; rc=3; }
done
((rc == 0)) && echo "two_versions: both Burn versions ran on one host at once"
exit $rc
