#!/usr/bin/env bash
# The main demo, from a fresh machine: builds `atl` (release) and evaluates the matrix
# multiplication example on deterministic random inputs, then prints a program in
# canonical Unicode form.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release -p atl-cli --quiet
atl=target/release/atl
echo "== examples/matmul/matmul.atl"
cat examples/matmul/matmul.atl
echo
echo "== atl check"
"$atl" check examples/matmul/matmul.atl
echo
echo "== atl eval --sizes M=3,N=4,K=5 --input A=random:1 --input B=random:2"
"$atl" eval examples/matmul/matmul.atl --sizes M=3,N=4,K=5 --input A=random:1 --input B=random:2
echo
echo "== the same, as JSON"
"$atl" eval examples/matmul/matmul.atl --sizes M=3,N=4,K=5 --input A=random:1 --input B=random:2 --json
echo
echo "== atl fmt --unicode examples/pipeline/pipeline.atl"
"$atl" fmt --unicode examples/pipeline/pipeline.atl
echo
echo "== atl bench: the register-tiled, packed matmul schedule against the specification"
"$atl" bench examples/matmul/matmul.atl --def fast --vs matmul --sizes M=256,N=256,K=256 --runs 5
