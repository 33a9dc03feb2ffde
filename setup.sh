#!/usr/bin/env bash
# Installs what flashstep needs on Debian 12 (when missing) and builds it into build/.
# The CUDA backend is built when nvcc is found (PATH or /usr/local/cuda); otherwise skipped.
set -euo pipefail
cd "$(dirname "$0")"
packages=(cmake g++ make pkg-config libeigen3-dev catch2 libcli11-dev nlohmann-json3-dev
          libimgui-dev libglfw3-dev libstb-dev xvfb xauth fonts-dejavu-core
          pybind11-dev python3-dev python3-numpy python3-pytest python3-matplotlib
          jupyter-nbconvert python3-nbclient python3-ipykernel jupyter-notebook)
packages+=(dpkg-dev file)  # the Debian package: CPack runs dpkg-shlibdeps and file (docs/packaging.md)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
launcher=()  # ccache when installed (optional: a fresh machine has none)
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
cmake --build build -j"$(nproc)"
