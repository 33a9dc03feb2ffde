# tools/device/fp8_verify_cases.sh: the verify --schedule decode --dtype fp8 shapes the FP8 decode
# device scripts share (fp8_decode.sh, fp8_decode_fast.sh): ragged Nk, d = 64 and 128, per tensor
# and per block, the rotation with outliers, paged, a key length, several query rows, S = 1.
# Source it; FP8_VERIFY holds one argument string per verify.
FP8_VERIFY=(
  "--nq 1 --nk 65536 --d 128 --dtype fp8"
  "--nq 1 --nk 10007 --d 64 --dtype fp8 --fp8-scale per-block"
  "--nq 1 --nk 30001 --d 128 --dtype fp8 --fp8-scale per-block --rotate --pattern outliers"
  "--nq 1 --nk 20000 --d 128 --dtype fp8 --fp8-scale per-block --page-size 16"
  "--nq 4 --nk 5000 --d 64 --dtype fp8 --page-size 7 --kv-len 3000 --splits 5"
  "--nq 1 --nk 4099 --d 128 --dtype fp8 --fp8-scale per-block --splits 1"
  "--nq 3 --nk 2500 --d 64 --dtype fp8 --fp8-scale per-block --M 12288 --splits 9"
  "--nq 1 --nk 777 --d 64 --dtype fp8 --rotate --splits 1"
)
