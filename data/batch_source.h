// Where a training run's batches come from, one per step: freshly generated pairs of a toy
// task, the batches of a fixed list of pairs cycled in order, epochs of batches of similar
// length (§5.1: "sentence pairs were batched together by approximate sequence length"), or
// windows at random places in a text's token stream (a language model's, data/text_windows.h).
//
// A source can say where it stands and go back there, which is how a resumed run draws the
// same batches as one that never stopped. An epoch is not stored: it is drawn again from the
// generator as it was before the epoch, which gives the same batches.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "autograd/random.h"
#include "data/batch.h"
#include "data/pair.h"
#include "data/tasks.h"

namespace gf::data {

// Enough to draw the same next batch again.
struct BatchPosition {
  Rng::State batches{};      // the generator's state
  Rng::State epoch_start{};  // by length: the generator before the current epoch was drawn
  int64_t next = 0;          // the next batch of the epoch, or of the cycled list, by index
  bool in_epoch = false;     // by length: an epoch has been drawn (from epoch_start)
};

class BatchSource {
 public:
  // `batch` fresh pairs of the task per step, drawn from rng.
  static BatchSource generated(Task task, const TaskConfig& config, int64_t batch, Rng rng);
  // Consecutive slices of `batch` pairs, in order, starting again after the last. rng is not
  // drawn from; it is kept so that every source saves a position of the same form.
  static BatchSource cycled(std::vector<Pair> pairs, int64_t batch, Rng rng);
  // Epochs of batches_by_length(pairs, max_tokens, rng), each drawn when the last runs out.
  static BatchSource by_length(std::vector<Pair> pairs, int64_t max_tokens, Rng rng);
  // `batch` windows of `context` tokens of stream per step (window_at), each at a start drawn
  // uniformly from rng among those where a whole window fits. Throws std::invalid_argument for
  // a stream of no more than context tokens.
  static BatchSource windows(std::vector<int32_t> stream, int64_t context, int64_t batch,
                             int32_t bos, Rng rng);

  Batch next();

  BatchPosition position() const;
  // Throws std::invalid_argument when the epoch drawn again does not end where the saved
  // generator did: the pairs are not those of the run the position was saved from.
  void restore(const BatchPosition& position);

  bool is_generated() const { return kind_ == Kind::Generated; }
  const TaskConfig& task_config() const { return task_config_; }
  std::span<const Pair> pairs() const { return pairs_; }       // none when generated or windows
  std::span<const int32_t> stream() const { return stream_; }  // windows: the tokens
  int64_t longest() const;  // the longest source or target the source can give, in tokens

 private:
  enum class Kind { Generated, Cycled, ByLength, Windows };
  BatchSource(Kind kind, Rng rng, int64_t size);

  Kind kind_;
  Rng rng_;
  Rng::State epoch_start_;
  int64_t size_;  // pairs per batch (generated, cycled) or padded tokens per batch (by length)
  Task task_ = Task::Copy;
  TaskConfig task_config_;
  std::vector<Pair> pairs_;
  std::vector<int32_t> stream_;  // windows
  int64_t context_ = 0;          // windows
  int32_t bos_ = 0;              // windows
  std::vector<std::vector<Pair>> epoch_;
  int64_t next_ = 0;
};

}  // namespace gf::data
