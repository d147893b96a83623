// `transformer score | decode | attention`: using a trained checkpoint.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "data/batch.h"
#include "data/pairs_file.h"
#include "data/parallel_corpus.h"
#include "models/decode.h"
#include "nn/attention.h"
#include "training/evaluate.h"
#include "training/run_page.h"
#include "viz/heatmap.h"

namespace gf::cli {

// For each pair: -sum_t log P(tgt[t+1] | src, tgt[0..t]), the negative log-likelihood of the
// target under the model, in nats. Dropout off, no smoothing: the model's own probabilities.
int run_score(const ScoreOptions& o) {
  auto model = training::load_model(o.ckpt);
  const data::PairsFile file = data::read_pairs(o.pairs);
  data::check_ids(file, static_cast<int32_t>(model->config.vocab_size));
  const int64_t max_len = model->config.max_len;
  for (size_t i = 0; i < file.pairs.size(); ++i) {  // before any output, so none is partial
    const data::Pair& p = file.pairs[i];
    const auto longest = static_cast<int64_t>(std::max(p.src.size(), p.tgt.size() - 1));
    if (longest > max_len)
      throw std::invalid_argument(
          fmt::format("{}:{}: a sequence of {} tokens is longer than the model's max_len {}",
                      file.source, file.lines[i], longest, max_len));
  }
  // 0 - sum, not -sum: a sum of +0 prints as 0.000000, not -0.000000.
  for (const data::Pair& pair : file.pairs)
    fmt::print("{:.6f}\n", 0.0 - training::log_likelihood(*model, pair.src, pair.tgt));
  return 0;
}

// Source ids on stdin, one sequence per line; output ids on stdout, without bos and eos.
int run_decode(const DecodeOptions& o) {
  // Checked here, in the same words as train's options, rather than with CLI11's range check,
  // whose message prints the largest double in full.
  if (o.beam < 1)
    throw std::invalid_argument(fmt::format("--beam must be positive, got {}", o.beam));
  if (o.max_len < 0)
    throw std::invalid_argument(fmt::format("--max-len must not be negative, got {}", o.max_len));
  if (o.length_penalty < 0.0f)
    throw std::invalid_argument(
        fmt::format("--length-penalty must not be negative, got {}", o.length_penalty));
  auto model = training::load_model(o.ckpt);
  const data::IdLines lines = data::read_id_lines(std::cin);
  data::check_ids(lines, static_cast<int32_t>(model->config.vocab_size));
  // Each line decoded alone, so that its output does not depend on the lines beside it.
  const std::vector<TokenIds> outputs = training::decode_corpus(*model, lines.sequences,
                                                                {.beam = o.beam,
                                                                 .length_penalty = o.length_penalty,
                                                                 .max_len = o.max_len,
                                                                 .batch = 1,
                                                                 .by_length = false});
  for (const TokenIds& out : outputs) fmt::print("{}\n", fmt::join(out, " "));
  return 0;
}

namespace {

struct Kind {
  AttentionKind kind;
  const char* file;   // file name stem
  const char* title;  // for pictures
};

// The source and the target the maps are drawn for, as ids; the target starts with <s>.
struct Sentences {
  std::vector<int32_t> src, tgt;
};

// --src and --tgt as ids, or without --tgt the model's own translation of --src.
Sentences read_sentences(const AttentionOptions& o, Transformer& model,
                         const data::Tokenizer* tokenizer) {
  const TransformerConfig& c = model.config;
  // Each id list is checked against the vocabulary as soon as it is read: the source before
  // the greedy decoding below, whose own message would not name --src.
  auto check_range = [&](const std::vector<int32_t>& ids, const char* what) {
    for (int32_t id : ids)
      if (id >= c.vocab_size)
        throw std::invalid_argument(
            fmt::format("{}: token id {} is out of range [0, {})", what, id, c.vocab_size));
  };
  // A model trained on text reads text (its tokenizer adds <eos> to the source); one trained
  // on ids reads ids, as given.
  auto read = [&](const std::string& text, const char* what, bool source) {
    if (!tokenizer) return parse_ids(text, what);
    if (source) return data::encode_pair(*tokenizer, text, "").src;
    std::vector<int32_t> ids = tokenizer->encode(text);
    ids.push_back(c.eos_id);
    return ids;
  };
  std::vector<int32_t> src = read(o.src, "--src", true);
  check_range(src, "--src");
  std::vector<int32_t> tgt;
  if (!o.tgt.empty()) {
    tgt = read(o.tgt, "--tgt", false);
    if (tgt.front() != c.bos_id) tgt.insert(tgt.begin(), c.bos_id);
  } else {
    tgt = own_translation(model, src);
  }
  check_range(tgt, "--tgt");
  if (tgt.size() < 2)
    throw std::invalid_argument("--tgt: give at least one token after <s> (its id is 1)");
  return {std::move(src), std::move(tgt)};
}

// The labels of the rows and columns: the source's tokens, the target's tokens the decoder
// reads, and those it predicts.
struct Labels {
  std::vector<std::string> src, read, next;
};

// One heatmap per head of every layer of one kind of attention, and all of them in a grid.
// Returns the number of images written.
int draw_kind(const Transformer& model, const Kind& k, const Labels& labels,
              const std::string& out) {
  const bool queries_from_target = k.kind != AttentionKind::EncoderSelf;
  const bool keys_from_target = k.kind == AttentionKind::DecoderSelf;
  const viz::HeatmapOptions panel{
      .row_labels = queries_from_target ? labels.next : labels.src,
      .col_labels = keys_from_target ? labels.read : labels.src,
      .row_axis = queries_from_target ? "target query (the token it predicts)" : "source (query)",
      .col_axis = keys_from_target ? "target (key: the token read)" : "source (key)",
      .colour_bar = false};
  int written = 0;
  const std::vector<Tensor> maps = model.attention(k.kind);
  for (size_t layer = 0; layer < maps.size(); ++layer)
    for (int64_t head = 0; head < maps[layer].dim(1); ++head) {
      viz::HeatmapOptions alone = panel;
      alone.title = fmt::format("{}, layer {}, head {}", k.title, layer + 1, head + 1);
      alone.value_label = "attention weight";
      alone.colour_bar = true;
      viz::write_png(viz::heatmap(maps[layer], head, alone),
                     fmt::format("{}/{}_layer{}_head{}.png", out, k.file, layer + 1, head + 1));
      ++written;
    }
  viz::write_png(
      viz::attention_grid(maps, panel, fmt::format("{}: layers (rows) x heads (columns)", k.title)),
      fmt::format("{}/{}_grid.png", out, k.file));
  return written + 1;
}

}  // namespace

// Heatmaps of every head of every layer for the three uses of attention (§3.2.3): rows are
// queries, columns keys, each labelled with its token.
int run_attention(const AttentionOptions& o) {
  training::ModelAndTokenizer loaded = training::load_model_and_tokenizer(o.ckpt);
  Transformer* model = loaded.model.get();
  const data::Tokenizer* tokenizer = loaded.tokenizer.get();
  const auto [src, tgt] = read_sentences(o, *model, tokenizer);

  // The decoder reads tgt[:-1], and its position i predicts tgt[i+1]. So the rows (queries)
  // of the target's maps are labelled with the token each one predicts, which puts "cat" in
  // the row that attends to where "cat" comes from; the keys of decoder self-attention are the
  // tokens read.
  const std::vector<int32_t> tgt_in(tgt.begin(), tgt.end() - 1),
      tgt_next(tgt.begin() + 1, tgt.end());
  model->eval();
  model->record_attention(true);
  {
    NoGrad no_grad;
    model->forward(IndexTensor::from({1, static_cast<int64_t>(src.size())}, src),
                   IndexTensor::from({1, static_cast<int64_t>(tgt_in.size())}, tgt_in));
  }
  const training::TokenNames names = training::token_names(tokenizer, model->config);
  auto labels = [&names](const std::vector<int32_t>& ids) {
    std::vector<std::string> out;
    for (int32_t id : ids) out.push_back(names(id));
    return out;
  };
  const Labels all_labels{labels(src), labels(tgt_in), labels(tgt_next)};
  std::filesystem::create_directories(o.out);
  int written = 0;
  for (const Kind& k : {Kind{AttentionKind::EncoderSelf, "encoder_self", "encoder self-attention"},
                        Kind{AttentionKind::DecoderSelf, "decoder_self", "decoder self-attention"},
                        Kind{AttentionKind::Cross, "cross", "cross-attention"}})
    written += draw_kind(*model, k, all_labels, o.out);
  fmt::print("wrote {} images to {}\n", written, o.out);
  return 0;
}

}  // namespace gf::cli
