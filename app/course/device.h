// The device's ceilings for the roofline and the memory-hierarchy page: NVIDIA's published
// figures for the H200 SXM (the H200 data sheet: HBM3e 141 GB at 4.8 TB/s; 67 TFLOP/s float32
// on the CUDA cores; 989 TFLOP/s dense bf16 and 1979 dense FP8 on the tensor cores, the 1979 and
// 3958 printed there being with 2:4 sparsity). The SM count, shared memory per SM and L2 come from core/l2_cache's GPU
// table, which the L2 model uses too. Sources: device.h200.FIELD (docs/course.md, "The source names").
#pragma once
#include <cstdint>

namespace flashstep::course {

struct DeviceCeilings {
  const char* name;
  double hbm_bytes_per_s;  // HBM bandwidth
  double fp32_flops;       // float32 FMA on the CUDA cores, FLOP/s
  double bf16_tc_flops;    // dense bf16 on the tensor cores, FLOP/s
  double hbm_bytes;        // HBM capacity
  double fp8_tc_flops;     // dense FP8 (e4m3) on the tensor cores, FLOP/s
};

inline constexpr DeviceCeilings kH200 = {"NVIDIA H200", 4.8e12, 67e12, 989e12, 141e9, 1979e12};

// FLOP per byte where a kernel stops being limited by the bandwidth: peak / bandwidth.
inline double ridge_point(double flops, const DeviceCeilings& d) { return flops / d.hbm_bytes_per_s; }

}  // namespace flashstep::course
