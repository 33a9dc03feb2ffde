set -u
source tools/device/lib.sh; dev_libs build-carry/lib
FS=build-carry/bin/flashstep
run() {  # tag cmd...
  nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 50 > $OUT/$1.smi &
  p=$!; tag=$1; shift
  timeout 120 "$@" > $OUT/$tag.txt 2>&1; echo "$tag rc=$?"
  kill $p; wait $p 2>/dev/null; sleep 2
}
run fp8 $FS bench-gpu --tensor-cores --dtype fp8 --no-sweep --n 16384 --d 128 --back-to-back 100
run bf16 $FS bench-gpu --tensor-cores --dtype bf16 --no-standard --no-sweep --n 16384 --d 128 --back-to-back 100
run fp8b $FS bench-gpu --tensor-cores --dtype fp8 --no-sweep --n 16384 --d 128 --back-to-back 100
for t in fp8 bf16 fp8b; do
  grep -E "16384" $OUT/$t.txt | grep -v bench | head -3
  python3 -c "
import statistics,sys
r=[tuple(map(float,l.split(','))) for l in open('$OUT/$t.smi') if l.count(',')==1 and 'N/A' not in l]
b=[x for x in r if x[1]>200]
print('$t', 'MHz', statistics.median(x[0] for x in b) if b else '-', 'W', statistics.median(x[1] for x in b) if b else '-', 'n', len(b))"
done
