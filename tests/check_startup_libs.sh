#!/bin/sh
# A build with the CUDA backend starts without loading cuBLAS: gpu/tensor_core.cpp opens it when
# standard attention on tensor cores first runs. Linked, libcublasLt's load and initialisers cost
# every start about 0.35 s (`--version`, `learn`, each test's command line). The dynamic loader's
# own log (LD_DEBUG=files) says which libraries a start of `flashstep --version` loads.
# Usage: check_startup_libs.sh FLASHSTEP
bin=${1:?usage: check_startup_libs.sh FLASHSTEP}
log=$(LD_DEBUG=files "$bin" --version 2>&1 >/dev/null) || { echo "FAIL: $bin --version failed"; exit 1; }
printf '%s\n' "$log" | grep -q 'file=libc\.so' || { echo "FAIL: LD_DEBUG=files logged no library (no loader log to judge by)"; exit 1; }
loaded=$(printf '%s\n' "$log" | grep -o 'file=[^ ]*cublas[^ ]*' | sort -u)
if [ -n "$loaded" ]; then
  echo "FAIL: flashstep --version loads cuBLAS at start:"
  printf '%s\n' "$loaded"
  exit 1
fi
echo "ok: flashstep --version starts without cuBLAS"
