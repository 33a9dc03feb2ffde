#!/bin/sh
# The dependency rule of the layers (see README's architecture map): core/ includes nothing
# from app/ or gpu/; gpu/ includes nothing from app/ and no command-line library; the GPU
# backend's target does not link CLI11. Prints each breach and fails if there is one.
# Usage: check_layers.sh SOURCE_ROOT
root=${1:?usage: check_layers.sh SOURCE_ROOT}
status=0
breach() { echo "layer rule broken: $1"; status=1; }

hits=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<](app|gpu)/' "$root/core") &&
  breach "core/ includes app/ or gpu/:
$hits"
hits=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<](app/|CLI/)' "$root/gpu") &&
  breach "gpu/ includes app/ or CLI11:
$hits"
hits=$(grep -nE 'CLI11' "$root/gpu/CMakeLists.txt") &&
  breach "gpu/CMakeLists.txt links CLI11:
$hits"

[ $status -eq 0 ] && echo "layers ok: core <- gpu <- app"
exit $status
