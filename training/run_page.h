// What a run's page (viz/run_page.h) shows, taken from the model and its training: the
// attention of a sentence pair, snapshots of it as training goes on, the dev metric, the
// curves, the settings and the timings. `transformer train` fills a page at the end of a run
// and `transformer report` redraws one from a checkpoint and its training state.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "data/pair.h"
#include "data/sentence_pairs.h"
#include "data/tokenizer.h"
#include "models/transformer.h"
#include "nn/safetensors.h"
#include "viz/run_page.h"

namespace gf::training {

// How a token id is written on the page: the tokenizer's label ("▁Haus"), or for a model of
// plain ids "<pad>", "<s>", "</s>", "<unk>" and the number.
using TokenNames = std::function<std::string(int32_t id)>;
TokenNames token_names(const data::Tokenizer* tokenizer, const TransformerConfig& config);
// The names of ids, separated by spaces: "<s> 5 6 7 </s>".
std::string token_text(std::span<const int32_t> ids, const TokenNames& names);

// Every attention map of one pair from a teacher-forced forward pass with dropout off
// (viz::AttentionMaps says which tokens label what). src is the encoder's input; tgt starts
// with bos and ends with eos: the decoder reads tgt[:-1] and predicts tgt[1:]. Leaves the model
// as it found it (train or eval mode, attention recording, grad mode), so that it may run in the
// middle of training without changing what training draws next. Throws std::invalid_argument
// for a tgt shorter than two tokens.
viz::AttentionMaps attention_maps(Transformer& model, std::span<const int32_t> src,
                                  std::span<const int32_t> tgt, const TokenNames& names);

// The steps at which a run of last_step steps takes its snapshots: 0 (the initial weights) and
// count - 1 more, evenly spaced up to last_step, without repeats ({0, 150, 300, 450, 600} for
// 600 and 5). Fewer when the run is shorter than count.
std::vector<int64_t> snapshot_steps(int64_t last_step, int64_t count);

// What a run records for its page while it trains. It is kept in the training state (as JSON
// under "history.page", attention weights in thousandths), so that a resumed run's page covers the whole run and `transformer
// report` can draw it again.
struct PageHistory {
  std::string metric{};  // what metric_values are: "BLEU, greedy, 100 dev pairs"
  std::vector<double> metric_steps{}, metric_values{};
  std::vector<viz::AttentionSnapshot> snapshots{};
  // A language model's: a text it sampled at each snapshot, (step, text).
  std::vector<std::pair<int64_t, std::string>> samples{};
  double training_seconds = 0.0;  // the steps alone, over every part of a resumed run
  double checking_seconds = 0.0;  // evaluations and snapshots
  int64_t target_tokens = 0, sequences = 0;

  std::string to_json() const;
  // Throws FormatError "SOURCE: ..." for text that is not a PageHistory's JSON.
  static PageHistory from_json(const std::string& text, const std::string& source);
};

// Records a run's page history as it trains: at each of snapshot_steps(last_step, count), the
// attention of one fixed pair and the dev metric. A resumed run goes on with the history it had.
class PageRecorder {
 public:
  struct Metric {
    std::string name;                           // "BLEU, greedy, 100 dev pairs"
    std::function<double(Transformer&)> score;  // must leave the model as it found it
    // A language model's: the text to keep with each snapshot; none for other tasks.
    std::function<std::string(Transformer&)> sample{};
  };
  PageRecorder(data::Pair pair, TokenNames names, Metric metric, int64_t last_step, int64_t count,
               PageHistory history = {});

  // At a snapshot step, records the snapshot and the metric, else does nothing. Returns
  // whether it recorded.
  bool at_step(Transformer& model, int64_t step);
  PageHistory& history() { return history_; }
  const PageHistory& history() const { return history_; }

 private:
  data::Pair pair_;
  TokenNames names_;
  Metric metric_;
  std::vector<int64_t> steps_;
  PageHistory history_;
};

// ("d_model", "64"), ... for a model: its configuration and its parameter count.
viz::Facts model_facts(const Transformer& model);

// What a run's page says of the run beside the model: its title, its settings (shown after the
// model's facts) and its data.
struct RunPageHeader {
  std::string title{}, subtitle{};
  viz::Facts settings{}, data{};
  std::string loss = "label-smoothed cross-entropy, §5.4";  // what the loss curve shows
};

// The header of a run of `transformer train` from the settings its training state keeps
// (training/run_config.h: to_metadata), or of a checkpoint without one (settings empty).
RunPageHeader trained_run_header(const std::string& checkpoint, const nn::Metadata& settings,
                                 int64_t steps);

// The parts of a run's page that every run has: the header, the model's facts, the curves, the
// timings and the attention snapshots of the history. What only the run knows (samples beside
// their references, the attention of chosen pairs) its caller adds.
viz::RunPage run_page(const RunPageHeader& header, const Transformer& model,
                      std::span<const float> losses, std::span<const float> rates,
                      const PageHistory& history);

// The loss smoothed for reading: an exponential moving average over about `span` values (the
// weight on the past is 1 - 1/span), each divided by the weight the average has gathered, so
// that the first values are not pulled towards zero.
std::vector<float> moving_average(std::span<const float> values, double span);
// The span a run's curves smooth its loss over: a 50th of its steps, at least 10. One step's
// loss is as noisy as its batch, so over 10,000 steps it is a band; the average is a line.
double smoothing_span(size_t steps);

// The loss (log axis: each step's, faint, and its moving_average), the learning rate and, when
// the history has one, the dev metric.
std::vector<viz::Curve> training_curves(
    std::span<const float> losses, std::span<const float> rates, const PageHistory& history,
    const std::string& loss_name = "label-smoothed cross-entropy, §5.4");

// Seconds and speeds: "training", "per step", "target tokens per second", ... (the speeds in
// tokens and sequences only when the history counted them).
viz::Facts timing_facts(const PageHistory& history, int64_t steps);

// Translations of the pairs' sources (greedy) beside their references, each scored with
// sentence BLEU.
std::vector<viz::Sample> translation_samples(Transformer& model, const data::Tokenizer& tokenizer,
                                             std::span<const data::SentencePair> pairs);

// Greedy decodings of id pairs beside their targets, each scored 1 when exact, else 0.
std::vector<viz::Sample> sequence_samples(Transformer& model, std::span<const data::Pair> pairs,
                                          const TokenNames& names);

}  // namespace gf::training
