// The special token ids every vocabulary in the project shares: toy tasks, tokenizers and
// checkpoints alike (docs/checkpoint-format.md, "Special token ids": pad_id, bos_id, eos_id).
//
//   pad 0   fills the short sequences of a batch; masks and the loss ignore it
//   bos 1   begin of sequence: the first decoder input, from which generation starts
//   eos 2   end of sequence: the model emits it to stop
//   unk 3   a word the tokenizer does not know
//
// Ids 0 .. kNumSpecial-1 are these four; real content starts at kNumSpecial.
#pragma once

#include <cstdint>

namespace gf::data {

inline constexpr int32_t kPad = 0;
inline constexpr int32_t kBos = 1;
inline constexpr int32_t kEos = 2;
inline constexpr int32_t kUnk = 3;
inline constexpr int32_t kNumSpecial = 4;  // the first id that is not special

}  // namespace gf::data
