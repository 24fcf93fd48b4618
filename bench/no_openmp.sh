#!/usr/bin/env bash
# bench/no_openmp.sh -- the kit kernels (bench/kit.sh's KERNELS) built three ways and
# timed at one thread, to check that a kernel compiled without OpenMP keeps its SIMD
# speed (issue 21):
#
#   a: $CFLAGS -fopenmp          run with OMP_NUM_THREADS=1
#   b: $CFLAGS                   no OpenMP at all
#   c: $CFLAGS -fopenmp-simd     OpenMP's simd pragmas only, no threads
#
#   bash bench/no_openmp.sh [RUNS] [ROUNDS]     (defaults 5 and 3)
#
# Each build links the same harness (bench/no_openmp.c) with the four kernels exactly
# as `atl emit` prints them; the table is the best of ROUNDS x RUNS calls per build,
# the rounds interleaving the builds (a, b, c, a, b, c, ...) so that a slow phase of
# the machine hits all three. Prints the CPU, the compiler and the ratios b/a, c/a.
# Environment: CC (default gcc), CFLAGS (default -O3 -march=native), ATL_NO_OPENMP_BUILD
# (where to build, default target/no_openmp), CARGO_TARGET_DIR (where atl is built).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
OUT="${ATL_NO_OPENMP_BUILD:-$ROOT/target/no_openmp}"
CC="${CC:-gcc}"
CFLAGS="${CFLAGS:--O3 -march=native}"
RUNS="${1:-5}"
ROUNDS="${2:-3}"

# workload symbol | file | definition (as bench/kit.sh)
KERNELS=(
  "blur3x3|kit_blur3x3|examples/blur/blur.atl|fast"
  "matmul|kit_matmul|examples/matmul/matmul.atl|fast"
  "tensor_add4d|kit_tensor_add4d|examples/tensor_add/tensor_add.atl|fast"
  "conv1d|kit_conv1d|examples/conv1d_kit/conv1d_kit.atl|fast"
)
BUILDS=(a b c)
declare -A FLAGS=([a]="-fopenmp" [b]="" [c]="-fopenmp-simd")

mkdir -p "$OUT"
echo "[no_openmp.sh] building atl (release)" >&2
(cd "$ROOT" && cargo build --release -q -p atl-cli)
ATL="$ROOT/target/release/atl"
[ -n "${CARGO_TARGET_DIR:-}" ] && ATL="$CARGO_TARGET_DIR/release/atl"

for k in "${KERNELS[@]}"; do
  IFS='|' read -r _ sym file def <<< "$k"
  "$ATL" emit "$ROOT/$file" --def "$def" --name "$sym" -o "$OUT/$sym.c"
done
for b in "${BUILDS[@]}"; do
  objs=()
  for k in "${KERNELS[@]}"; do
    IFS='|' read -r _ sym _ _ <<< "$k"
    # -Wall -Werror: a build without OpenMP must not warn about the kernels' pragmas.
    # shellcheck disable=SC2086
    $CC $CFLAGS ${FLAGS[$b]} -Wall -Wextra -Werror -c "$OUT/$sym.c" -o "$OUT/$sym.$b.o"
    objs+=("$OUT/$sym.$b.o")
  done
  # shellcheck disable=SC2086
  $CC $CFLAGS ${FLAGS[$b]} "$HERE/no_openmp.c" "${objs[@]}" -o "$OUT/no_openmp.$b" -lm
done

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
echo "CC:  $($CC --version | head -1); CFLAGS: $CFLAGS; best of $ROUNDS x $RUNS calls, 1 thread"
printf '%-14s %10s %10s %10s %7s %7s\n' workload "a: omp ms" "b: none" "c: simd" "b/a" "c/a"
for k in "${KERNELS[@]}"; do
  IFS='|' read -r wl _ _ _ <<< "$k"
  declare -A best=()
  declare -A sums=()
  for _ in $(seq "$ROUNDS"); do
    for b in "${BUILDS[@]}"; do
      read -r ms sum < <(OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive "$OUT/no_openmp.$b" "$wl" "$RUNS")
      sums[$b]="$sum"
      if [ -z "${best[$b]:-}" ] || awk -v x="$ms" -v y="${best[$b]}" 'BEGIN { exit !(x < y) }'; then
        best[$b]="$ms"
      fi
    done
  done
  awk -v w="$wl" -v a="${best[a]}" -v b="${best[b]}" -v c="${best[c]}" \
    'BEGIN { printf "%-14s %10.2f %10.2f %10.2f %7.2f %7.2f\n", w, a, b, c, b / a, c / a }'
  if [ "${sums[a]}" != "${sums[b]}" ] || [ "${sums[a]}" != "${sums[c]}" ]; then
    echo "  (checksums: a ${sums[a]}, b ${sums[b]}, c ${sums[c]})"
  fi
  unset best sums
done
