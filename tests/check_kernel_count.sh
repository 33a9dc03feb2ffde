#!/bin/sh
# The default build's kernel budget (gpu/README.md): the flashstep binary holds at most LIMIT
# kernel entries, counted as `nm BIN | grep -c __device_stub__` counts them (each kernel's host
# stub and its handles), so that a template parameter that multiplies kernels without a measured
# reason shows up here. Prints the count and the kernels with the most instantiations.
# Usage: check_kernel_count.sh BIN LIMIT
bin=${1:?usage: check_kernel_count.sh BIN LIMIT}
limit=${2:?usage: check_kernel_count.sh BIN LIMIT}
command -v nm >/dev/null || { echo "nm (binutils) is needed"; exit 2; }
[ -f "$bin" ] || { echo "no binary at $bin"; exit 2; }
count=$(nm "$bin" | grep -c __device_stub__)
echo "$count __device_stub__ symbols in $bin (limit $limit); kernels by name, instantiations:"
nm "$bin" | grep __device_stub__ | awk '{print $3}' | grep -v '^_ZGV' | grep '_kernel' |
  sed -E 's/.*[0-9]([a-z][a-z0-9_]*_kernel).*/\1/' | sort | uniq -c | sort -rn |
  awk '{printf "  %4d %s\n", $1 / 2, $2}' | head -12
if [ "$count" -eq 0 ]; then
  echo "no kernel found: is this the CUDA build's binary?"
  exit 1
fi
[ "$count" -le "$limit" ]
