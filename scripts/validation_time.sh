#!/usr/bin/env bash
# Validation cost over the examples: runs `atl validate` on every definition and
# derivation of examples/*/*.atl with one or more `atl` binaries (interleaved per
# kernel, so that all see the same machine load) and prints, per kernel and in total,
# the number of obligations, the verdict and the wall time.
#
#   bash scripts/validation_time.sh target/release/atl [OTHER_ATL ...]
#
# Used to compare a change's validation cost with the commit before it (build the old
# binary from a worktree of that commit). Timings are wall-clock: say which machine.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -eq 0 ]; then
    echo "usage: $0 ATL_BINARY [ATL_BINARY ...]" >&2
    exit 2
fi
declare -A total_ms total_obligations total_validated
for b in "$@"; do
    total_ms[$b]=0; total_obligations[$b]=0; total_validated[$b]=0
done
kernels=0
for file in examples/*/*.atl; do
    for def in $(grep -oE "^(def|derive) [A-Za-z0-9_]+" "$file" | awk '{print $2}'); do
        kernels=$((kernels + 1))
        line="$file $def"
        for b in "$@"; do
            start=$(date +%s%N)
            out=$("$b" validate "$file" --def "$def" 2>&1 || true)
            ms=$(( ($(date +%s%N) - start) / 1000000 ))
            obligations=$(echo "$out" | grep -oE "^kernel [^:]+: [0-9]+ obligations" | grep -oE "[0-9]+ obligations" | awk '{print $1}' || true)
            obligations=${obligations:-0}
            validated=$(echo "$out" | grep -cE "^verdict: validated" || true)
            total_ms[$b]=$((total_ms[$b] + ms))
            total_obligations[$b]=$((total_obligations[$b] + obligations))
            total_validated[$b]=$((total_validated[$b] + validated))
            line="$line | $obligations obligations, ${ms} ms, validated=$validated"
        done
        echo "$line"
    done
done
echo "kernels: $kernels"
for b in "$@"; do
    echo "$b: validated ${total_validated[$b]}, obligations ${total_obligations[$b]}, ${total_ms[$b]} ms"
done
