#include "data/batch.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "autograd/errors.h"

namespace gf::data {

// A pad id inside a real sequence would be masked out and ignored by the loss as if it were
// padding, silently; refusing it here turns that into a clear error.
static void check_no_pad(const char* op, std::span<const int32_t> seq, int32_t pad,
                         const std::string& where) {
  const auto it = std::find(seq.begin(), seq.end(), pad);
  if (it != seq.end())
    throw std::invalid_argument(
        fmt::format("{}: {} contains the pad id {} at position {} (padding is added when batching)",
                    op, where, pad, it - seq.begin()));
}

// A [B, L] tensor whose row b holds row(b) followed by pad; row(b) has at most L ids.
static IndexTensor stack_padded(int64_t batch, int64_t length, int32_t pad, auto&& row) {
  std::vector<int32_t> ids(static_cast<size_t>(batch * length), pad);
  for (int64_t b = 0; b < batch; ++b) {
    const std::span<const int32_t> r = row(b);
    std::copy(r.begin(), r.end(), ids.begin() + static_cast<std::ptrdiff_t>(b * length));
  }
  return IndexTensor::from({batch, length}, std::move(ids));
}

IndexTensor pad_sequences(std::span<const std::vector<int32_t>> sequences, int32_t pad) {
  if (sequences.empty()) throw ShapeError("pad_sequences: no sequences to pad");
  size_t longest = 0;
  for (size_t i = 0; i < sequences.size(); ++i) {
    if (sequences[i].empty())
      throw ShapeError(fmt::format("pad_sequences: sequence {} is empty", i));
    check_no_pad("pad_sequences", sequences[i], pad, fmt::format("sequence {}", i));
    longest = std::max(longest, sequences[i].size());
  }
  return stack_padded(static_cast<int64_t>(sequences.size()), static_cast<int64_t>(longest), pad,
                      [&](int64_t b) { return std::span(sequences[static_cast<size_t>(b)]); });
}

Batch make_batch(std::span<const Pair> pairs, int32_t pad) {
  if (pairs.empty()) throw ShapeError("make_batch: the batch is empty (0 pairs)");
  size_t src_len = 0, tgt_len = 0;
  // A decoder-only model's examples have no source (pair.h): a batch is all of them or none.
  const bool decoder_only = pairs.front().src.empty();
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Pair& p = pairs[i];
    if (p.src.empty() != decoder_only)
      throw ShapeError(
          fmt::format("make_batch: pair {} has {} source, but pair 0 has {} (a batch is for an "
                      "encoder-decoder or a decoder-only model, not both)",
                      i, p.src.empty() ? "an empty" : "a", decoder_only ? "none" : "one"));
    // Teacher forcing needs a non-empty decoder input tgt[:-1] and target tgt[1:].
    if (p.tgt.size() < 2)
      throw ShapeError(fmt::format(
          "make_batch: pair {} has a target of {} token{} but needs at least 2 (bos and "
          "one token to predict)",
          i, p.tgt.size(), p.tgt.size() == 1 ? "" : "s"));
    check_no_pad("make_batch", p.src, pad, fmt::format("the source of pair {}", i));
    check_no_pad("make_batch", p.tgt, pad, fmt::format("the target of pair {}", i));
    src_len = std::max(src_len, p.src.size());
    tgt_len = std::max(tgt_len, p.tgt.size());
  }
  const int64_t batch = static_cast<int64_t>(pairs.size());
  const int64_t t = static_cast<int64_t>(tgt_len) - 1;

  // In the forward pass the decoder reads tgt_in and is scored against tgt_out: both drop one
  // token of each target, the last (tgt[:-1]) and the first (tgt[1:]), then pad to T.
  auto pair_at = [&](int64_t b) -> const Pair& {
    return pairs[static_cast<size_t>(b)];
  };
  Batch out;
  out.src = stack_padded(batch, static_cast<int64_t>(src_len), pad,
                         [&](int64_t b) { return std::span(pair_at(b).src); });
  out.tgt_in = stack_padded(batch, t, pad, [&](int64_t b) {
    return std::span(pair_at(b).tgt).first(pair_at(b).tgt.size() - 1);
  });
  out.tgt_out =
      stack_padded(batch, t, pad, [&](int64_t b) { return std::span(pair_at(b).tgt).subspan(1); });
  const int32_t* target = out.tgt_out.data();
  out.target_tokens =
      std::count_if(target, target + batch * t, [pad](int32_t id) { return id != pad; });
  return out;
}

std::vector<std::span<const Pair>> batches_in_order(std::span<const Pair> pairs,
                                                    int64_t batch_size) {
  if (batch_size < 1)
    throw std::invalid_argument(
        fmt::format("batches_in_order: batch size is {} but must be at least 1", batch_size));
  std::vector<std::span<const Pair>> batches;
  const size_t size = static_cast<size_t>(batch_size);
  for (size_t start = 0; start < pairs.size(); start += size)
    batches.push_back(pairs.subspan(start, std::min(size, pairs.size() - start)));
  return batches;
}

}  // namespace gf::data
