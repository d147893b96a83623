// Toy sequence-to-sequence tasks, generated in code from a seed: the copy task (the
// Annotated Transformer's first experiment; it is not in the paper) and the reverse task.
//
//   copy:     src = c1 c2 ... cn eos      tgt = bos c1 c2 ... cn eos
//   reverse:  src = c1 c2 ... cn eos      tgt = bos cn ... c2 c1 eos
//
// A model that has learned copy attends from target position i to source position i, so its
// cross-attention heatmap is the diagonal; for reverse it is the anti-diagonal.
//
// Content tokens c are drawn uniformly from [kNumSpecial, vocab_size) = [4, vocab_size): the
// four special ids (vocab.h) are reserved even here, unk included, so a toy vocabulary is laid
// out like a tokenizer's and a decoded id >= 4 is always content. With the default vocabulary
// of 11 that leaves 7 content symbols, which still gives 7^10 distinct sequences of length 10.
//
// Randomness comes only from gf::Rng::below, whose output is the same with every standard
// library, so a seed gives the same data everywhere.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/random.h"
#include "data/pair.h"

namespace gf::data {

enum class Task { Copy, Reverse };

// "copy" -> Task::Copy, "reverse" -> Task::Reverse. Throws std::invalid_argument naming the
// valid tasks: unknown task "cpy" (valid tasks: copy, reverse).
Task parse_task(std::string_view name);
std::string task_name(Task task);  // the inverse of parse_task

// The defaults are the Annotated Transformer's setup: 11 symbols, sequences of length 10.
// Each pair's content length is drawn uniformly from [min_len, max_len].
struct TaskConfig {
  int32_t vocab_size = 11;
  int64_t min_len = 10, max_len = 10;
};

// Throws std::invalid_argument naming the field and the allowed range when vocab_size leaves
// no content symbol (it must be at least kNumSpecial + 1 = 5) or when not 1 <= min_len <= max_len.
void validate(const TaskConfig& config);

// One pair of each task; the content length is drawn first, then the tokens in order.
// Throws as validate() does.
Pair copy_pair(const TaskConfig& config, Rng& rng);
Pair reverse_pair(const TaskConfig& config, Rng& rng);
Pair generate_pair(Task task, const TaskConfig& config, Rng& rng);

// count pairs of the task, in the order drawn. Throws std::invalid_argument for count < 0 and
// as validate() does.
std::vector<Pair> generate(Task task, int64_t count, const TaskConfig& config, Rng& rng);

}  // namespace gf::data
