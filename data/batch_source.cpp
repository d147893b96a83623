#include "data/batch_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "data/parallel_corpus.h"
#include "data/text_windows.h"

namespace gf::data {

BatchSource::BatchSource(Kind kind, Rng rng, int64_t size)
    : kind_(kind), rng_(rng), epoch_start_(rng.state()), size_(size) {
  if (size < 1)
    throw std::invalid_argument(fmt::format("BatchSource: batch size {} is not positive", size));
}

BatchSource BatchSource::generated(Task task, const TaskConfig& config, int64_t batch, Rng rng) {
  validate(config);
  BatchSource source(Kind::Generated, rng, batch);
  source.task_ = task;
  source.task_config_ = config;
  return source;
}

BatchSource BatchSource::cycled(std::vector<Pair> pairs, int64_t batch, Rng rng) {
  if (pairs.empty()) throw std::invalid_argument("BatchSource: no pairs to cycle through");
  BatchSource source(Kind::Cycled, rng, batch);
  source.pairs_ = std::move(pairs);
  return source;
}

BatchSource BatchSource::by_length(std::vector<Pair> pairs, int64_t max_tokens, Rng rng) {
  if (pairs.empty()) throw std::invalid_argument("BatchSource: no pairs to batch");
  BatchSource source(Kind::ByLength, rng, max_tokens);
  source.pairs_ = std::move(pairs);
  return source;
}

BatchSource BatchSource::windows(std::vector<int32_t> stream, int64_t context, int64_t batch,
                                 int32_t bos, Rng rng) {
  if (context < 1) throw std::invalid_argument(fmt::format("BatchSource: context {} < 1", context));
  if (std::ssize(stream) <= context)
    throw std::invalid_argument(fmt::format(
        "the text has {} tokens, too few for one window of {} (a shorter --max-len, or more text)",
        stream.size(), context));
  BatchSource source(Kind::Windows, rng, batch);
  source.stream_ = std::move(stream);
  source.context_ = context;
  source.bos_ = bos;
  return source;
}

Batch BatchSource::next() {
  switch (kind_) {
    case Kind::Generated:
      return make_batch(generate(task_, size_, task_config_, rng_));
    case Kind::Cycled: {
      const int64_t count = std::ssize(pairs_), batches = (count + size_ - 1) / size_;
      const int64_t start = next_++ % batches * size_;
      return make_batch(std::span<const Pair>(pairs_).subspan(
          static_cast<size_t>(start), static_cast<size_t>(std::min(size_, count - start))));
    }
    case Kind::ByLength:
      if (next_ == std::ssize(epoch_)) {
        epoch_start_ = rng_.state();
        epoch_ = batches_by_length(pairs_, size_, rng_);
        next_ = 0;
      }
      return make_batch(epoch_[static_cast<size_t>(next_++)]);
    case Kind::Windows: {
      std::vector<Pair> windows;
      const int64_t starts = std::ssize(stream_) - context_ + 1;
      for (int64_t b = 0; b < size_; ++b)
        windows.push_back(window_at(stream_, rng_.below(starts), context_, bos_));
      return make_batch(windows);
    }
  }
  throw std::logic_error("BatchSource: unknown kind");
}

BatchPosition BatchSource::position() const {
  return {.batches = rng_.state(),
          .epoch_start = epoch_start_,
          .next = next_,
          .in_epoch = !epoch_.empty()};
}

void BatchSource::restore(const BatchPosition& position) {
  epoch_start_ = position.epoch_start;
  next_ = position.next;
  if (kind_ != Kind::ByLength || !position.in_epoch) {
    rng_.set_state(position.batches);
    // Before its first batch: the epoch drawn since then is not the source's any more, and
    // the next batch must draw it again from the generator (keeping it would also leave the
    // generator where the epoch started, so that the epoch after it came out the same).
    epoch_.clear();
    return;
  }
  rng_.set_state(position.epoch_start);
  epoch_ = batches_by_length(pairs_, size_, rng_);
  if (rng_.state() != position.batches || position.next < 0 || next_ > std::ssize(epoch_))
    throw std::invalid_argument("the training pairs differ from those of the run being resumed");
}

int64_t BatchSource::longest() const {
  if (kind_ == Kind::Generated) return task_config_.max_len + 2;  // bos and eos
  if (kind_ == Kind::Windows) return context_ + 1;                // bos and the window
  size_t longest = 0;
  for (const Pair& p : pairs_) longest = std::max({longest, p.src.size(), p.tgt.size()});
  return static_cast<int64_t>(longest);
}

}  // namespace gf::data
