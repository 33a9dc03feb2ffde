#!/usr/bin/env bash
# The GPU commands' files written only once the report is out: gpu, gpu --backward (float32 and
# tensor cores), each once to a file and once with standard output on /dev/full.
set -u
mkdir -p /tmp/hb && tar -C /tmp/hb -xJf build-carry/hostchk/bin.tar.xz || exit 2
export LD_LIBRARY_PATH=$PWD/build-carry/lib:${LD_LIBRARY_PATH:-}
F=/tmp/hb/flashstep; W=/tmp/hw; rm -rf $W; mkdir -p $W; cd $W
nvidia-smi --query-gpu=name --format=csv,noheader
run() { local name=$1; shift
  $F "$@" --out-o ok_$name.npy > out_$name.txt 2>&1; echo "$name ok: rc=$? files=$(ls ok_$name* 2>/dev/null | tr '\n' ' ')"
  $F "$@" --out-o full_$name.npy > /dev/full 2> err_$name.txt; echo "$name /dev/full: rc=$? files=$(ls full_$name* 2>/dev/null | tr '\n' ' ') $(cat err_$name.txt)"
  $F "$@" --out-o pipe_$name.npy 2> perr_$name.txt | head -c 10 > /dev/null; echo "$name | head: files=$(ls pipe_$name* .pipe_$name* 2>/dev/null | tr '\n' ' ') $(cat perr_$name.txt)"
}
run fwd gpu --schedule fa2 --n 256 --d 64
run bwd gpu --schedule fa2 --backward --n 256 --d 64
run bwdtc gpu --schedule fa2 --backward --tensor-cores --dtype bf16 --n 256 --d 64
ls -A $W | grep -v "^out_\|^err_\|^perr_"
cat out_bwdtc.txt | head -8
