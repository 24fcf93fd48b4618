#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what the build and the Rocq
# tests need (via scripts/setup.sh), then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --with-rocq
cargo test --workspace --all-targets "$@"
