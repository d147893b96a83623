// What a training run scores its model on while and after it trains, always by greedy
// decoding, never teacher forcing: the model must produce each token from its own.
//   text            BLEU on eval_count dev pairs spread over the dev set (training pairs when
//                   there is none, which only shows what the model memorised), and on the
//                   whole dev set at the end;
//   generated task  exact copies of fresh sequences, drawn from a stream of their own so that
//                   checking does not change the training data;
//   id file         its own pairs, at the end;
//   language model  the perplexity of eval_count windows spread over the dev text (the training
//                   text when there is none), and of the whole dev text at the end beside a
//                   bigram model's (models/bigram.h); a sample at each of the page's snapshots.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autograd/random.h"
#include "data/batch_source.h"
#include "data/pair.h"
#include "data/sentence_pairs.h"
#include "data/text_windows.h"
#include "data/tokenizer.h"
#include "models/bigram.h"
#include "models/transformer.h"
#include "training/run_config.h"
#include "training/run_page.h"

namespace gf::training {

// The text of a run: the sentence pairs of a text task, train and dev (dev.pairs empty when
// there is no dev set), or a language model's texts (dev_text.text empty without one).
struct RunText {
  data::SentencePairsFile train, dev;
  data::TextFile train_text, dev_text;
};

// Reads --data and --dev, or generates the toy language from the seed (the same corpus as
// `transformer generate` with that seed writes). Nothing for a task of ids.
RunText read_run_text(const RunSettings& settings);

class RunChecks {
 public:
  static constexpr size_t kPageSamples = 8;  // decodes shown beside their references

  // tokenizer is null for a task of ids. fresh: the stream of fresh sequences; page_stream:
  // where a generated task's page sequences are drawn from (a copy of fresh in a new run, the
  // first part's in a resumed one). Keeps references to text and batches.
  RunChecks(const RunSettings& settings, const RunText& text, const data::BatchSource& batches,
            const data::Tokenizer* tokenizer, Rng fresh, Rng page_stream);

  // The stream that fresh sequences are drawn from, which the training state saves.
  Rng& fresh_stream() { return fresh_; }
  // The state the page sequences were drawn from, which the training state saves too.
  Rng::State page_stream() const { return page_stream_; }

  // What the run's page scores, samples and shows the attention of: the check pairs (text),
  // the first fresh sequences the checks would draw (a generated task, the same in every run of
  // the seed), or the id file's first pairs.
  std::vector<data::Pair> page_pairs() const;
  PageRecorder::Metric page_metric() const;

  // Text: BLEU of the check pairs. Moves no random stream.
  double check_bleu(Transformer& model) const;
  // A language model: the perplexity of the check windows. Moves no random stream.
  double check_perplexity(Transformer& model) const;
  std::string check_set() const;  // "100 dev pairs", "100 windows of the dev text"

  // A generated task: the share of eval_count fresh sequences, drawn now from the fresh
  // stream, that the model decodes exactly. Nothing for an id file.
  std::optional<double> exact_on_fresh_sequences(Transformer& model);

  // The final line: BLEU and chrF on the dev set, or the exact share of fresh sequences (drawn
  // from the fresh stream) or of the training pairs.
  std::string final_scores(Transformer& model);

  // The data's sizes and examples, samples beside their references, and the attention of the
  // first three page pairs.
  void fill_page(viz::RunPage& page, Transformer& model, const TokenNames& names) const;

 private:
  const char* pairs_name() const;
  std::vector<data::Pair> fresh_pairs();
  std::string language_model_scores(Transformer& model) const;
  void fill_language_model_page(viz::RunPage& page) const;
  std::string sample_text(Transformer& model) const;

  const RunSettings& settings_;
  const RunText& text_;
  const data::BatchSource& batches_;
  const data::Tokenizer* tokenizer_;
  Rng fresh_;
  Rng::State page_stream_;
  std::vector<data::SentencePair> check_pairs_;  // text
  std::vector<data::Pair> page_sequences_;       // a generated task
  std::vector<int32_t> dev_stream_;              // a language model: the dev text's tokens
  std::vector<data::Pair> check_windows_;        // a language model
  std::optional<BigramModel> bigram_;            // a language model: the baseline
};

}  // namespace gf::training
