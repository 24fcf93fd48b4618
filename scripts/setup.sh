#!/usr/bin/env bash
# Installs the system packages the workspace needs to build, and nothing else.
#
# Idempotent: a package is installed only when `dpkg -s` says it is missing, and
# `apt-get update` runs only when something has to be installed.
#
# - libz3-dev: the solver crate links the system libz3 (no bundled/static build;
#   building z3 from source takes too long for CI).
# - libclang-dev: z3-sys 0.8 runs bindgen at build time to read z3's enums from the
#   installed z3.h (so the enum values match the linked library exactly); bindgen
#   loads libclang at run time and needs clang's builtin headers.
# - pkg-config: lets build scripts locate system libraries.
# - coq and make (only with `--with-rocq`, as scripts/test.sh and CI ask): Rocq 8.16 (Debian's
#   package name), which checks the rule library's proofs in proofs/rocq and runs the
#   semantic agreement test (rewrites/tests/rocq.rs). Building does not need it.
# - cmake (also only with `--with-rocq`, i.e. for the test suite): the example C project
#   examples/integration/c is built with its CMakeLists.txt, and with make, by
#   cli/tests/integration_c.rs.
# - numpy and scipy for the python3 first on PATH (also only with `--with-rocq`): the
#   Python example examples/integration/python runs in cli/tests/integration_python.rs,
#   which also passes scipy.sparse matrices to a module's `sparse_A`. The distro
#   packages python3-numpy and python3-scipy when that python3 is the system one
#   (/usr/bin), otherwise (pyenv, a virtualenv…) `python3 -m pip install --user numpy
#   scipy`.
set -euo pipefail

# numpy and scipy for the python3 the tests run.
install_numpy() {
    if python3 -c "import numpy, scipy" >/dev/null 2>&1; then
        echo "setup: numpy and scipy present for $(command -v python3)"
        return
    fi
    local python
    python=$(python3 -c "import sys; print(sys.executable)")
    if [ "$python" = /usr/bin/python3 ] || [ "$(readlink -f "$python")" = "$(readlink -f /usr/bin/python3)" ]; then
        numpy_via_apt=1
    else
        echo "setup: installing numpy and scipy for $python with pip"
        python3 -m pip install --user -q numpy scipy
    fi
}
numpy_via_apt=0

packages=(libz3-dev libclang-dev pkg-config)
if [ "${1:-}" = "--with-rocq" ]; then
    packages+=(coq make cmake)
    install_numpy
    if [ "$numpy_via_apt" = 1 ]; then
        packages+=(python3-numpy python3-scipy)
    fi
fi

missing=()
for pkg in "${packages[@]}"; do
    if ! dpkg -s "$pkg" >/dev/null 2>&1; then
        missing+=("$pkg")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    echo "setup: all system packages present (${packages[*]})"
    exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
    sudo_cmd=(sudo)
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
