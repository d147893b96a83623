#include "training/evaluate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/ops.h"
#include "data/batch.h"
#include "data/pairs_file.h"
#include "data/parallel_corpus.h"
#include "data/toy_language.h"
#include "data/vocab.h"
#include "training/trainer.h"

namespace gf::training {

namespace {

// Each source text's ids, then eos, as the model reads them. Throws std::invalid_argument naming
// the sentence for one longer than the model's max_len.
std::vector<std::vector<int32_t>> encode_sources(const Transformer& model,
                                                 const data::Tokenizer& tokenizer,
                                                 std::span<const std::string> sources) {
  std::vector<std::vector<int32_t>> encoded;
  encoded.reserve(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    encoded.push_back(tokenizer.encode(sources[i]));
    encoded.back().push_back(data::kEos);
    if (static_cast<int64_t>(encoded.back().size()) > model.config.max_len)
      throw std::invalid_argument(
          fmt::format("sentence {} has {} tokens, more than the model's max_len {}", i + 1,
                      encoded.back().size(), model.config.max_len));
  }
  return encoded;
}

// The [T * S] attention map of one head of probs [1, H, T, S], or with head -1 the heads' mean.
std::vector<float> head_or_mean(const Tensor& probs, int64_t head) {
  const int64_t heads = probs.dim(1), rows = probs.dim(2), columns = probs.dim(3);
  if (head >= 0)
    return {probs.data() + head * rows * columns, probs.data() + (head + 1) * rows * columns};
  std::vector<float> mean(static_cast<size_t>(rows * columns), 0.0f);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t k = 0; k < rows * columns; ++k)
      mean[static_cast<size_t>(k)] +=
          probs.data()[h * rows * columns + k] / static_cast<float>(heads);
  return mean;
}

}  // namespace

std::vector<TokenIds> decode_corpus(Transformer& model,
                                    std::span<const std::vector<int32_t>> sources,
                                    const DecodeSettings& settings) {
  std::vector<size_t> order(sources.size());
  std::iota(order.begin(), order.end(), size_t{0});
  if (settings.by_length)
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return sources[a].size() < sources[b].size(); });
  std::vector<TokenIds> outputs(sources.size());
  const auto batch = static_cast<size_t>(std::max<int64_t>(settings.batch, 1));
  for (size_t start = 0; start < order.size(); start += batch) {
    const size_t end = std::min(order.size(), start + batch);
    std::vector<std::vector<int32_t>> chunk;
    for (size_t k = start; k < end; ++k) chunk.push_back(sources[order[k]]);
    const IndexTensor src = data::pad_sequences(chunk, model.config.pad_id);
    std::vector<TokenIds> decoded = settings.beam > 1
                                        ? beam_search(model, src,
                                                      {.beam = settings.beam,
                                                       .length_penalty = settings.length_penalty,
                                                       .max_len = settings.max_len,
                                                       .early_stop = settings.early_stop})
                                        : greedy_decode(model, src,
                                                        {.max_len = settings.max_len,
                                                         .use_cache = true,
                                                         .stop_at_eos = settings.stop_at_eos});
    for (size_t k = start; k < end; ++k) outputs[order[k]] = std::move(decoded[k - start]);
  }
  return outputs;
}

std::vector<std::string> translate_texts(Transformer& model, const data::Tokenizer& tokenizer,
                                         std::span<const std::string> sources,
                                         const DecodeSettings& settings) {
  std::vector<std::string> translations;
  for (const TokenIds& output :
       decode_corpus(model, encode_sources(model, tokenizer, sources), settings))
    translations.push_back(tokenizer.decode(output));
  return translations;
}

std::vector<int32_t> read_source(const Transformer& model, const data::Tokenizer* tokenizer,
                                 const std::string& source) {
  std::vector<int32_t> src;
  if (tokenizer) {
    src = encode_sources(model, *tokenizer, std::span<const std::string>(&source, 1)).front();
  } else {
    std::istringstream line(source);
    const data::IdLines ids = data::read_id_lines(line, "source");
    data::check_ids(ids, static_cast<int32_t>(model.config.vocab_size));
    if (ids.sequences.size() > 1)
      throw std::invalid_argument("the source is one line of token ids, not several");
    if (!ids.sequences.empty()) src = ids.sequences.front();
    if (std::ssize(src) > model.config.max_len)
      throw std::invalid_argument(
          fmt::format("the source has {} tokens, more than the model's max_len {}", src.size(),
                      model.config.max_len));
  }
  if (src.empty()) throw std::invalid_argument("the source is empty: give a sentence to decode");
  return src;
}

DecodedSource decode_source(Transformer& model, const data::Tokenizer* tokenizer,
                            const std::string& source, const DecodeSettings& settings) {
  DecodedSource decoded;
  decoded.src = read_source(model, tokenizer, source);
  DecodeSettings one = settings;
  one.batch = 1;
  const TokenIds output =
      decode_corpus(model, std::span<const std::vector<int32_t>>(&decoded.src, 1), one).front();
  decoded.output =
      tokenizer ? tokenizer->decode(output) : fmt::format("{}", fmt::join(output, " "));
  decoded.tgt = {model.config.bos_id};
  decoded.tgt.insert(decoded.tgt.end(), output.begin(), output.end());
  decoded.tgt.push_back(model.config.eos_id);
  return decoded;
}

TranslationScores score_translations(Transformer& model, const data::Tokenizer& tokenizer,
                                     std::span<const data::SentencePair> pairs,
                                     const DecodeSettings& settings,
                                     std::optional<data::BleuTokenize> bleu_tokenize) {
  std::vector<std::string> sources, references;
  for (const data::SentencePair& p : pairs) {
    sources.push_back(p.source);
    references.push_back(p.target);
  }
  TranslationScores scores;
  scores.outputs = decode_corpus(model, encode_sources(model, tokenizer, sources), settings);
  for (const TokenIds& output : scores.outputs)
    scores.hypotheses.push_back(tokenizer.decode(output));
  scores.bleu =
      data::corpus_bleu(scores.hypotheses, references,
                        bleu_tokenize ? *bleu_tokenize : data::choose_bleu_tokenize(references));
  scores.chrf = data::corpus_chrf(scores.hypotheses, references);
  int64_t same = 0;
  for (size_t i = 0; i < pairs.size(); ++i) same += scores.hypotheses[i] == references[i];
  scores.exact =
      pairs.empty() ? 0.0 : static_cast<double>(same) / static_cast<double>(pairs.size());
  return scores;
}

bool decodes_to(const TokenIds& output, std::span<const int32_t> target, int32_t eos) {
  const std::span<const int32_t> tokens = target.subspan(1);
  if (!tokens.empty() && tokens.back() == eos)
    return std::equal(output.begin(), output.end(), tokens.begin(), tokens.end() - 1);
  return output.size() >= tokens.size() && std::equal(tokens.begin(), tokens.end(), output.begin());
}

double exact_match(Transformer& model, std::span<const data::Pair> pairs) {
  std::vector<std::vector<int32_t>> sources;
  // No output longer than tgt.size() - 1 tokens can match (decodes_to): a target with eos needs
  // its content and then eos, one without needs its tokens. So decoding may stop there, where
  // an untrained model would go on to its source's length + 50 (GreedyOptions::max_len). Only
  // when that is below every source's own limit, so that no answer changes.
  int64_t longest = 1;
  int64_t shortest_source = std::numeric_limits<int64_t>::max();
  for (const data::Pair& p : pairs) {
    sources.push_back(p.src);
    longest = std::max(longest, static_cast<int64_t>(p.tgt.size()) - 1);
    shortest_source = std::min(shortest_source, static_cast<int64_t>(p.src.size()));
  }
  const bool within_limits = longest <= shortest_source + 50;
  const std::vector<TokenIds> outputs =
      decode_corpus(model, sources, {.max_len = within_limits ? longest : 0, .by_length = false});
  int64_t exact = 0;
  for (size_t i = 0; i < pairs.size(); ++i)
    exact += decodes_to(outputs[i], pairs[i].tgt, model.config.eos_id);
  return static_cast<double>(exact) / static_cast<double>(pairs.size());
}

double log_likelihood(Transformer& model, std::span<const int32_t> src,
                      std::span<const int32_t> tgt) {
  nn::EvalScope eval(model);
  NoGrad no_grad;
  const data::Pair pair{.src = {src.begin(), src.end()}, .tgt = {tgt.begin(), tgt.end()}};
  const data::Batch batch = data::make_batch(std::span<const data::Pair>(&pair, 1));
  const Tensor log_probs = log_softmax(model.forward(batch.src, batch.tgt_in));  // [1, T, V]
  const int64_t t_len = batch.tgt_out.numel(), v = model.config.vocab_size;
  double sum = 0.0;
  for (int64_t t = 0; t < t_len; ++t)
    sum += static_cast<double>(log_probs.data()[t * v + batch.tgt_out.data()[t]]);
  return sum;
}

namespace {

// The mean over every target token of pairs (teacher forced, dropout off, no graph) of what
// batch_sum adds up over a batch's target tokens. op names the caller in the error.
template <typename BatchSum>
double mean_per_target_token(Transformer& model, std::span<const data::Pair> pairs,
                             int64_t batch_size, const char* op, BatchSum batch_sum) {
  if (pairs.empty()) throw std::invalid_argument(fmt::format("{}: no pairs", op));
  nn::EvalScope eval(model);
  NoGrad no_grad;
  double total = 0.0;
  int64_t tokens = 0;
  for (std::span<const data::Pair> slice : data::batches_in_order(pairs, batch_size)) {
    const data::Batch batch = data::make_batch(slice, model.config.pad_id);
    total += batch_sum(batch);
    tokens += batch.target_tokens;
  }
  return total / static_cast<double>(tokens);
}

}  // namespace

double perplexity(Transformer& model, std::span<const data::Pair> pairs, int64_t batch_size) {
  return std::exp(mean_per_target_token(
      model, pairs, batch_size, "perplexity", [&model](const data::Batch& batch) {
        // The loss is the mean over the batch's target tokens: times their number, the sum.
        const Tensor loss = teacher_forced_loss(model, batch, 0.0f);
        return static_cast<double>(loss.item()) * static_cast<double>(batch.target_tokens);
      }));
}

std::vector<std::string> sample_texts(Transformer& model, const data::Tokenizer& tokenizer,
                                      const std::string& prompt, const SampleOptions& options,
                                      uint64_t seed, int64_t count) {
  const std::vector<int32_t> ids = tokenizer.encode(prompt);
  Rng rng(seed);
  std::vector<std::string> texts;
  for (const TokenIds& continuation : sample(model, ids, options, rng, count))
    texts.push_back(prompt + tokenizer.decode(continuation));
  return texts;
}

double bits_per_character(double perplexity, int64_t tokens, int64_t characters) {
  if (characters < 1)
    throw std::invalid_argument(fmt::format("bits_per_character: {} characters", characters));
  return std::log2(perplexity) * static_cast<double>(tokens) / static_cast<double>(characters);
}

double prediction_entropy(Transformer& model, std::span<const data::Pair> pairs,
                          int64_t batch_size) {
  return mean_per_target_token(
      model, pairs, batch_size, "prediction_entropy", [&model](const data::Batch& batch) {
        const Tensor log_p = log_softmax(model.forward(batch.src, batch.tgt_in));  // [B, T, V]
        const Tensor entropy = neg(sum(mul(exp(log_p), log_p), 2));                // [B, T]
        const int32_t* target = batch.tgt_out.data();
        double nats = 0.0;
        for (int64_t i = 0; i < entropy.numel(); ++i)
          if (target[i] != model.config.pad_id)  // padding predicts nothing
            nats += static_cast<double>(entropy.data()[i]);
        return nats;
      });
}

bool has_alignments(const data::SentencePairsFile& file) {
  for (const data::SentencePair& p : file.pairs) {
    try {
      if (p.extra.empty() || data::parse_alignment(p.extra).empty()) return false;
    } catch (const std::invalid_argument&) {
      return false;
    }
  }
  return true;
}

data::AlignmentScore score_alignment(Transformer& model, const data::Tokenizer& tokenizer,
                                     const data::SentencePairsFile& file, int64_t layer,
                                     int64_t head) {
  const int64_t layers = model.config.decoder_layers;
  if (layer < -1 || layer >= layers)
    throw std::invalid_argument(fmt::format(
        "alignment layer {} does not exist: the decoder has layers 1 to {}", layer + 1, layers));
  if (head < -1 || head >= model.config.heads)
    throw std::invalid_argument(
        fmt::format("attention head {} does not exist: the layers have heads 1 to {}", head + 1,
                    model.config.heads));
  const auto chosen = static_cast<size_t>(layer < 0 ? layers - 1 : layer);
  // Only the layer scored keeps its weights (a copy each time: nn/attention.h).
  nn::MultiHeadAttention& cross = *model.decoder.layers[chosen]->cross_attn;
  nn::EvalScope eval(model);
  nn::RecordingAttention recording({&cross});
  NoGrad no_grad;
  data::AlignmentScore score;
  for (size_t i = 0; i < file.pairs.size(); ++i) {
    const data::SentencePair& p = file.pairs[i];
    std::vector<std::pair<int32_t, int32_t>> gold;
    try {
      gold = data::parse_alignment(p.extra);
    } catch (const std::exception& e) {
      throw FormatError(fmt::format("{}:{}: {}", file.name, file.lines[i], e.what()));
    }
    const data::Pair pair = data::encode_pair(tokenizer, p.source, p.target);
    // Teacher forcing on the reference: row t of the cross-attention is the step that produces
    // tgt[t + 1], so the rows are the target's tokens, then <eos> (no word).
    const std::vector<int32_t> tgt_in(pair.tgt.begin(), pair.tgt.end() - 1);
    model.forward(IndexTensor::from({1, static_cast<int64_t>(pair.src.size())}, pair.src),
                  IndexTensor::from({1, static_cast<int64_t>(tgt_in.size())}, tgt_in));
    const std::vector<float> attention = head_or_mean(cross.last_attention, head);  // [T * S]
    std::vector<int32_t> target_words = data::word_of_tokens(
        tokenizer, std::span<const int32_t>(pair.tgt).subspan(1, pair.tgt.size() - 2));
    target_words.push_back(-1);  // the row that produces <eos>
    const std::vector<int32_t> source_words = data::word_of_tokens(tokenizer, pair.src);
    try {
      data::add_alignment_score(attention, target_words, source_words, gold, score);
    } catch (const std::exception& e) {
      throw FormatError(fmt::format("{}:{}: {}", file.name, file.lines[i], e.what()));
    }
  }
  return score;
}

}  // namespace gf::training
