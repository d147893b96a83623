// The work a Transformer does, counted from its shapes alone: the floating-point operations of
// its matrix products (2 per multiply-add), which are nearly all of its arithmetic, and the
// bytes a decoding step must read. bench/ divides them by a measured time and compares the
// rate with the machine's limits (autograd/kernels/roofline.h); lesson 11 uses them to say
// where a training step's time goes.
//
// Shape legend: B batch, S source length, T target length, D d_model, F d_ff, V vocabulary.
#pragma once

#include <cstdint>

#include "models/transformer.h"

namespace gf {

struct GemmFlops {
  double linear = 0, attention = 0;  // the projections and FFNs; Q K^T and the weighted sum
  double total() const { return linear + attention; }
};

// The products of one training step (forward and backward) on `batch` sequences of `s` source
// and `t` target tokens, padding counted as tokens (the products are computed for it).
GemmFlops gemm_flops_per_step(const TransformerConfig& c, int64_t batch, int64_t s, int64_t t);

// Greedy decoding of `steps` tokens for `batch` sources of `s` tokens with the key/value cache
// (models/decode.h): what its products cost and what its steps must read.
struct DecodeWork {
  double encoder_flops = 0;  // the encoder and cross-attention's keys and values, once
  double step_flops = 0;     // the decoder's products, summed over the steps
  double step_bytes = 0;     // each step's reads, summed: weights and cached keys and values
};
DecodeWork greedy_decode_work(const TransformerConfig& c, int64_t batch, int64_t s, int64_t steps);

// The least time decoding could take on a machine of `peak_gflops` and `bandwidth_gbs`
// (kernels::peak_gflops, kernels::read_bandwidth_gbs): the encoder at the peak, then each step
// at the slower of its products at the peak and its reads at the bandwidth.
double greedy_decode_floor_seconds(const TransformerConfig& c, int64_t batch, int64_t s,
                                   int64_t steps, double peak_gflops, double bandwidth_gbs);

}  // namespace gf
