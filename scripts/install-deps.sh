#!/usr/bin/env bash
# Install the Debian packages loom needs, if any is missing.
# Called by `make` (deps target); safe to run again: it only installs what
# dpkg does not already know as installed.  Needs root (or sudo) only when
# something is missing.
set -euo pipefail

# build + test: compiler, GSL (random numbers), cJSON, XGBoost C API,
# Criterion (test framework), SciPy (tests/test_scipy.c recomputes loom's
# sparse algebra with scipy.sparse; the test skips without it), NumPy and wheel (the
# Python package python/loom and its offline pip install), gnuplot (loom db --plot); bench: Eigen,
# SuiteSparse:GraphBLAS and PyTorch (peer libraries; bench/torch_peer.py
# runs torch.sparse.mm and sampled_addmm), g++ for Eigen, OpenBLAS, cmake and
# git (bench/build_ggml.sh builds ggml, not a Debian package, from its
# source); fuzz: clang and its sanitizer/libFuzzer runtimes (make fuzz);
# --torch: PyTorch for the Python package's torch tensors (python3-torch,
# large: the Python tests skip that part without it).
PKGS=(gcc make pkg-config libgsl-dev libcjson-dev libxgboost-dev libcriterion-dev python3-scipy python3-numpy python3-wheel gnuplot-nox)
if [ "${1:-}" = "--bench" ]; then PKGS+=(g++ libeigen3-dev libopenblas-dev libgraphblas-dev python3-torch cmake git); fi
if [ "${1:-}" = "--fuzz" ]; then PKGS+=(clang libclang-rt-14-dev); fi
if [ "${1:-}" = "--torch" ]; then PKGS+=(python3-torch); fi
if [ "${1:-}" = "--mpi" ]; then PKGS+=(libopenmpi-dev openmpi-bin); fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present (${PKGS[*]})"
  exit 0
fi
echo "install-deps: installing missing Debian packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "install-deps: not root and no sudo; install these by hand: ${missing[*]}" >&2; exit 1; fi
fi
export DEBIAN_FRONTEND=noninteractive
echo "install-deps: apt-get update"
$SUDO apt-get update -qq
echo "install-deps: apt-get install ${missing[*]}"
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
