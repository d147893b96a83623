#include "models/flops.h"

#include <algorithm>

namespace gf {
namespace {

struct Dims {
  double d, f, v, enc, dec, cross;  // cross: 1 with cross-attention, 0 for the decoder alone
};
Dims dims_of(const TransformerConfig& c) {
  return {static_cast<double>(c.d_model),        static_cast<double>(c.d_ff),
          static_cast<double>(c.vocab_size),     static_cast<double>(c.encoder_layers),
          static_cast<double>(c.decoder_layers), c.decoder_only() ? 0.0 : 1.0};
}

// The multiply-adds of one decoder layer's projections and FFN for one target token:
// self-attention's q, k, v and output (4 D^2), cross-attention's q and output (2 D^2), the FFN
// (2 D F). Cross-attention's k and v are per source token, not here.
double decoder_token_linear(const Dims& m) {
  return 4 * m.d * m.d + m.cross * 2 * m.d * m.d + 2 * m.d * m.f;
}

// Step i (i = 1 .. steps) feeds one token per sequence and attends over the i tokens so far
// and the source. Its reads are every weight it multiplies by (once for the whole batch) and
// the keys and values cached for each sequence: i per decoder layer for self-attention, S for
// cross-attention.
struct StepWork {
  double flops, bytes;
};
StepWork decode_step_work(const Dims& m, double b, double sd, int64_t i) {
  const double weights = m.dec * decoder_token_linear(m) + m.d * m.v;  // floats read per step
  const double keys = static_cast<double>(i) + m.cross * sd;           // per layer and sequence
  return {.flops = 2 * b * (weights + m.dec * keys * 2 * m.d),
          .bytes = sizeof(float) * (weights + b * m.dec * keys * 2 * m.d)};
}

double encoder_flops(const Dims& m, double b, double sd) {
  return 2 * b *
         (m.enc * sd * (4 * m.d * m.d + 2 * m.d * m.f + 2 * sd * m.d) +
          m.cross * m.dec * sd * 2 * m.d * m.d);
}

}  // namespace

// [snippet: gemm-flops]
// The multiply-adds of one forward pass that are matrix products, from the shapes alone.
// linear: per source token, an encoder layer projects q, k, v and the output (4 D^2) and
// runs the FFN (2 D F); per target token, a decoder layer projects for self-attention
// (4 D^2) and q and the output of cross-attention (2 D^2) and runs the FFN; cross-attention's
// k and v are projected once per source token (2 D^2); the output layer costs D V. The
// decoder alone has no encoder and no cross-attention.
// attention (the fused attention ops): Q K^T and the weighted sum of V, 2 D per key, per
// query.
// Backward does two products the size of each forward one (dA and dB): 3x in all, 2 FLOPs
// per multiply-add.
GemmFlops gemm_flops_per_step(const TransformerConfig& c, int64_t batch, int64_t s, int64_t t) {
  const double d = static_cast<double>(c.d_model), f = static_cast<double>(c.d_ff);
  const double sd = static_cast<double>(s), td = static_cast<double>(t);
  const double enc = static_cast<double>(c.encoder_layers);
  const double dec = static_cast<double>(c.decoder_layers);
  const double cross = c.decoder_only() ? 0 : 1;
  const double linear =
      enc * sd * (4 * d * d + 2 * d * f) +
      dec * (td * (4 * d * d + cross * 2 * d * d + 2 * d * f) + cross * sd * 2 * d * d) +
      td * d * static_cast<double>(c.vocab_size);
  const double attention = enc * sd * 2 * sd * d + dec * td * (2 * td * d + cross * 2 * sd * d);
  const double per_multiply_add = 3 * 2 * static_cast<double>(batch);
  return {.linear = per_multiply_add * linear, .attention = per_multiply_add * attention};
}
// [/snippet]

DecodeWork greedy_decode_work(const TransformerConfig& c, int64_t batch, int64_t s, int64_t steps) {
  const Dims m = dims_of(c);
  const double b = static_cast<double>(batch), sd = static_cast<double>(s);
  DecodeWork work{.encoder_flops = encoder_flops(m, b, sd)};
  for (int64_t i = 1; i <= steps; ++i) {
    const StepWork step = decode_step_work(m, b, sd, i);
    work.step_flops += step.flops;
    work.step_bytes += step.bytes;
  }
  return work;
}

double greedy_decode_floor_seconds(const TransformerConfig& c, int64_t batch, int64_t s,
                                   int64_t steps, double peak_gflops, double bandwidth_gbs) {
  const Dims m = dims_of(c);
  const double b = static_cast<double>(batch), sd = static_cast<double>(s);
  double seconds = encoder_flops(m, b, sd) / (peak_gflops * 1e9);
  for (int64_t i = 1; i <= steps; ++i) {
    const StepWork step = decode_step_work(m, b, sd, i);
    seconds += std::max(step.flops / (peak_gflops * 1e9), step.bytes / (bandwidth_gbs * 1e9));
  }
  return seconds;
}

}  // namespace gf
