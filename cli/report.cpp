// `transformer report`: the page of a run (viz/run_page.h) for any checkpoint, with the curves,
// snapshots and timings of its training state when one lies beside it, and the attention of
// the sentences given with --src.
#include "cli/report.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>

#include "cli/commands.h"
#include "cli/common.h"
#include "data/pair.h"
#include "data/parallel_corpus.h"
#include "training/resume.h"

namespace gf::cli {

namespace {

// The options of a run, in the order a reader looks for them, as "--flag" rows; those left at
// "no value" (an empty path, a 0 that means "none" or "the default") are left out.
viz::Facts option_facts(const nn::Metadata& options, std::initializer_list<const char*> flags) {
  viz::Facts facts;
  for (const char* flag : flags) {
    const auto it = options.find(flag);
    if (it == options.end() || it->second.empty() || it->second == "0") continue;
    facts.emplace_back(fmt::format("--{}", flag), it->second);
  }
  return facts;
}

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

viz::RunPage run_page_of(const std::string& checkpoint, const Transformer& model,
                         const nn::Metadata& options, std::span<const float> losses,
                         std::span<const float> rates, const training::PageHistory& history) {
  viz::RunPage page;
  page.title = checkpoint;
  const auto task = options.find("task");
  page.subtitle = task == options.end()
                      ? "a checkpoint without its training state"
                      : fmt::format("{} task, {} steps", task->second, losses.size());
  // Each kind of task has its own data flags: those of the other kinds keep their defaults in
  // the options and would only mislead here.
  const bool text =
      task != options.end() && (task->second == "translate" || task->second == "toy-translation");
  page.configuration = training::model_facts(model);
  for (auto& fact : option_facts(
           options, {"optimizer", "schedule", "lr", "warmup", text ? "batch-tokens" : "batch",
                     "label-smoothing", "dropout", "clip", "seed"}))
    page.configuration.push_back(std::move(fact));
  page.data =
      text ? option_facts(options, {"task", "data", "dev", "split", "tokenizer", "vocab-size"})
           : option_facts(options, {"task", "pairs", "min-length", "length"});
  page.curves = training::training_curves(losses, rates, history);
  page.timings = training::timing_facts(history, std::ssize(losses));
  page.snapshots = history.snapshots;
  return page;
}

int run_report(const ReportOptions& o) {
  Translator loaded = load_model_and_tokenizer(o.ckpt);
  Transformer& model = *loaded.model;
  const data::Tokenizer* tokenizer = loaded.tokenizer.get();
  std::optional<training::TrainState> state;
  const std::string state_path = training::train_state_path(o.ckpt);
  if (std::filesystem::exists(state_path)) state = training::load_train_state(state_path);
  const training::PageHistory history =
      state && !state->page.empty() ? training::PageHistory::from_json(state->page, state_path)
                                    : training::PageHistory{};
  viz::RunPage page =
      state ? run_page_of(o.ckpt, model, state->options, state->losses, state->rates, history)
            : run_page_of(o.ckpt, model, {}, {}, {}, history);

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
