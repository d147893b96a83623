// `transformer report`: the page of a run (viz/run_page.h) for any checkpoint, with the curves,
// snapshots and timings of its training state when one lies beside it, and the attention of
// the sentences given with --src.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>

#include "cli/commands.h"
#include "cli/common.h"
#include "data/pair.h"
#include "data/parallel_corpus.h"
#include "training/model_file.h"
#include "training/resume.h"
#include "training/run_page.h"

namespace gf::cli {

namespace {

// The ids of a --src: text through the tokenizer (which adds eos), or ids as given.
std::vector<int32_t> source_ids(const std::string& text, const Transformer& model,
                                const data::Tokenizer* tokenizer) {
  std::vector<int32_t> ids =
      tokenizer ? data::encode_pair(*tokenizer, text, "").src : parse_ids(text, "--src");
  for (int32_t id : ids)
    if (id < 0 || id >= model.config.vocab_size)
      throw std::invalid_argument(fmt::format("--src \"{}\": token id {} is out of range [0, {})",
                                              text, id, model.config.vocab_size));
  if (std::ssize(ids) > model.config.max_len)
    throw std::invalid_argument(fmt::format("--src \"{}\": {} tokens, more than max_len {}", text,
                                            ids.size(), model.config.max_len));
  return ids;
}

}  // namespace

int run_report(const ReportOptions& o) {
  training::ModelAndTokenizer loaded = training::load_model_and_tokenizer(o.ckpt);
  Transformer& model = *loaded.model;
  const data::Tokenizer* tokenizer = loaded.tokenizer.get();
  std::optional<training::TrainState> state;
  const std::string state_path = training::train_state_path(o.ckpt);
  if (std::filesystem::exists(state_path)) state = training::load_train_state(state_path);
  const training::PageHistory history =
      state && !state->page.empty() ? training::PageHistory::from_json(state->page, state_path)
                                    : training::PageHistory{};
  const nn::Metadata settings = state ? state->options : nn::Metadata{};
  const std::vector<float> losses = state ? state->losses : std::vector<float>{},
                           rates = state ? state->rates : std::vector<float>{};
  viz::RunPage page =
      training::run_page(training::trained_run_header(o.ckpt, settings, std::ssize(losses)), model,
                         losses, rates, history);

  // Each --src with the model's own translation: its attention, and the output as a sample
  // (there is no reference to score it against).
  const training::TokenNames names = training::token_names(tokenizer, model.config);
  for (const std::string& text : o.sources) {
    const std::vector<int32_t> src = source_ids(text, model, tokenizer);
    const std::vector<int32_t> tgt = own_translation(model, src);
    page.attention.push_back(
        {.label = text, .maps = training::attention_maps(model, src, tgt, names)});
    const std::span<const int32_t> output =
        std::span<const int32_t>(tgt).subspan(1, tgt.size() - 2);
    page.samples.push_back({.source = text,
                            .output = tokenizer ? tokenizer->decode({output.begin(), output.end()})
                                                : fmt::format("{}", fmt::join(output, " ")),
                            .score = std::numeric_limits<double>::quiet_NaN()});
  }
  if (!page.samples.empty()) page.sample_metric = "no reference given";
  // Without --src, the last snapshot shows the attention of the run's own sentence.
  if (page.attention.empty() && !page.snapshots.empty())
    page.attention.push_back(
        {.label = fmt::format("the snapshot sentence, after step {}", page.snapshots.back().step),
         .maps = page.snapshots.back().maps});
  if (page.attention.empty())
    throw std::invalid_argument(fmt::format(
        "report: {} has no training state with snapshots beside it; give a sentence with --src",
        o.ckpt));
  const std::string out = o.out.empty() ? beside(o.ckpt, ".html") : o.out;
  viz::write_run_page(page, out);
  fmt::print("wrote {} ({:.0f} kB)\n", out,
             static_cast<double>(std::filesystem::file_size(out)) / 1000.0);
  return 0;
}

}  // namespace gf::cli
