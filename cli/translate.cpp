// `transformer translate | eval`: a checkpoint trained on text, with its tokenizer inside,
// turning text into text and scoring itself against references.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "cli/commands.h"
#include "cli/common.h"
#include "data/toy_language.h"
#include "data/utf8.h"
#include "training/evaluate.h"

namespace gf::cli {

namespace {

void check_decoding(int64_t beam, float length_penalty) {
  if (beam < 1) throw std::invalid_argument(fmt::format("--beam must be positive, got {}", beam));
  if (length_penalty < 0.0f)
    throw std::invalid_argument(
        fmt::format("--length-penalty must not be negative, got {}", length_penalty));
}

}  // namespace

// Lines of text on stdin, their translations on stdout, one line each (a blank line gives a
// blank line, so that outputs stay in step with inputs).
int run_translate(const TranslateOptions& o) {
  check_decoding(o.beam, o.length_penalty);
  training::ModelAndTokenizer translator = training::load_translator(o.ckpt);
  std::vector<std::string> lines;
  std::string line;
  for (int64_t number = 1; std::getline(std::cin, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    try {
      data::check_utf8(line);
    } catch (const data::Utf8Error& e) {
      throw FormatError(fmt::format("stdin:{}: {}", number, e.what()));
    }
    lines.push_back(line);
  }
  std::vector<std::string> sources;
  for (const std::string& l : lines)
    if (!l.empty()) sources.push_back(l);
  const std::vector<std::string> translations =
      training::translate_texts(*translator.model, *translator.tokenizer, sources,
                                {.beam = o.beam, .length_penalty = o.length_penalty});
  size_t next = 0;
  for (const std::string& l : lines) fmt::print("{}\n", l.empty() ? "" : translations[next++]);
  return 0;
}

// BLEU and chrF of the model's translations of a file's sources against its targets (BLEU's line
// ends with the tokenizer it used, "tok:13a" or "tok:zh"), and, when every line has a gold word
// alignment in its third column (the toy language's files), how often cross-attention points at
// the aligned word.
int run_eval(const EvalOptions& o) {
  check_decoding(o.beam, o.length_penalty);
  training::ModelAndTokenizer translator = training::load_translator(o.ckpt);
  // Checked before decoding the whole file, not after.
  if (o.alignment_layer < 0 || o.alignment_layer > translator.model->config.decoder_layers)
    throw std::invalid_argument(
        fmt::format("--alignment-layer {} does not exist: the decoder has layers 1 to {}",
                    o.alignment_layer, translator.model->config.decoder_layers));
  const data::SentencePairsFile file = data::read_sentence_pairs(o.data);
  std::optional<data::BleuTokenize> tokenize;  // auto: from the targets
  if (o.tokenize == "13a") tokenize = data::BleuTokenize::k13a;
  if (o.tokenize == "zh") tokenize = data::BleuTokenize::kZh;
  const training::TranslationScores scores =
      training::score_translations(*translator.model, *translator.tokenizer, file.pairs,
                                   {.beam = o.beam, .length_penalty = o.length_penalty}, tokenize);
  const std::string search =
      o.beam > 1 ? fmt::format("beam {}, length penalty {}", o.beam, o.length_penalty) : "greedy";
  fmt::print("{} pairs from {}, {}\n", file.pairs.size(), o.data, search);
  fmt::print("{}\n", scores.bleu.to_string());
  fmt::print("chrF2 = {:.2f} (precision {:.2f}, recall {:.2f})\n", scores.chrf.score,
             scores.chrf.precision, scores.chrf.recall);

  if (training::has_alignments(file)) {
    const int64_t layers = translator.model->config.decoder_layers;
    const int64_t layer = o.alignment_layer == 0 ? layers : o.alignment_layer;
    const data::AlignmentScore alignment =
        training::score_alignment(*translator.model, *translator.tokenizer, file, layer - 1);
    fmt::print(
        "alignment: {:.1f}% of {} aligned target words attend most to their source word "
        "(cross-attention, decoder layer {}, heads averaged, reference fed)\n",
        100 * alignment.accuracy(), alignment.total, layer);
  }
  if (!o.hypotheses.empty()) {
    std::ofstream out(o.hypotheses);
    for (const std::string& h : scores.hypotheses) out << h << '\n';
    if (!out) throw std::runtime_error(fmt::format("cannot write {}", o.hypotheses));
    fmt::print("translations written to {}\n", o.hypotheses);
  }
  return 0;
}

}  // namespace gf::cli
