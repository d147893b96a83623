// The browser edition's engine: one training::Run, which the page's Web Worker drives through
// the C functions below (JavaScript calls them with Emscripten's ccall). Each returns a JSON
// text, valid until the next call; a failure is {"error": "..."} carrying the library's own
// message, and leaves the run as it was.
//
//   gf_start("task=copy&heads=1", data)  a new run of these settings (training/run_options.h);
//                                  with task=translate, on data: SOURCE<TAB>TARGET lines; with
//                                  task=lm, on the text data, or the built-in text when it is ""
//   gf_step(steps, milliseconds)   train until either is used up, or the run ends
//   gf_status()                    where the run stands
//   gf_losses(from)                the losses and rates of the steps from `from` on
//   gf_score()                     exact copies (a generated task), BLEU (text) or the
//                                  perplexity (lm), scored now
//   gf_attention(example)          every attention map of one of the run's example pairs
//   gf_page()                      the run's page as it stands (viz/run_page.h), as HTML
//   gf_decode(source, beam)        the model's output for a source, with its attention
//   gf_sample(prompt, temperature, top_k, top_p, length, seed)
//                                  a language model's continuation of a prompt (models/sample.h)
//   gf_save()                      the model as a checkpoint, in the module's file system
//   gf_open(path, name)            a checkpoint from that file system (name: for messages)
//
// The model is the run's, or, after gf_open, the checkpoint's: opening one ends the run, and
// gf_start ends the checkpoint's turn. Checkpoints go in and out through Emscripten's file
// system in memory (FS.writeFile, FS.readFile), in the format of docs/checkpoint-format.md, so
// that `transformer decode` and `translate` read what the page saves, and the page what they do.
//
// The page runs on one thread with WebAssembly's 128-bit SIMD (kernels/simd.h): a page opened
// from a file gets no SharedArrayBuffer, so no threads.
#include <emscripten/emscripten.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "data/toy_language.h"
#include "training/choices.h"
#include "training/evaluate.h"
#include "training/model_file.h"
#include "training/run.h"
#include "training/run_options.h"
#include "training/run_page.h"

namespace {

using gf::training::Run;
using gf::training::Task;
using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

struct Engine {
  std::unique_ptr<Run> run;
  gf::training::ModelAndTokenizer opened;  // a checkpoint gf_open read, when there is no run
  std::string options;                     // the run's, with the playground's defaults filled in
  double step_seconds = 0.0;               // of the steps alone, for the speed on screen
  std::optional<double> score;
  int64_t scored_at = -1;
  std::string final_scores;  // a language model's, once its run has finished
  std::string answer;        // the text the last call returned
};

Engine& engine() {
  static Engine instance;
  return instance;
}

const char* answer(const Json& json) {
  engine().answer = json.dump();
  return engine().answer.c_str();
}

const char* error(const std::exception& e) {
  return answer(Json{{"error", e.what()}});
}

bool language_model(const Run& run) {
  return run.settings().task == Task::LanguageModel;
}

bool generated(const Run& run) {
  return !gf::training::is_tokenized(run.settings().task);
}

const char* metric_of(const Run& run) {
  if (language_model(run)) return "perplexity";
  return generated(run) ? "exact" : "bleu";
}

// The model the page decodes with: the run's, or the opened checkpoint's; null before either.
gf::Transformer* model_of(Engine& e) {
  return e.run ? &e.run->model() : e.opened.model.get();
}

const gf::data::Tokenizer* tokenizer_of(const Engine& e) {
  return e.run ? e.run->tokenizer() : e.opened.tokenizer.get();
}

// A message of the library, which names a file by its path in the module's file system, with
// the name the learner knows the file by instead.
std::string with_name(std::string message, std::string_view path, std::string_view name) {
  for (size_t at = message.find(path); at != std::string::npos;
       at = message.find(path, at + name.size()))
    message.replace(at, path.size(), name);
  return message;
}

// ---- The language model's defaults and its built-in text ---------------------------------

// A language model's settings in the playground, where the options leave them out. The native
// recipe (training/recipe.h: 4 pre-norm layers of d_model 128 reading windows of 128 tokens,
// 1200 steps) took 0.43 s a step in WebAssembly on one thread, nine minutes for the run: too
// slow to watch. On the built-in text this model of 2 layers of d_model 64 reading 64 tokens,
// 16 windows a step (the recipe's), took about 50 ms a step; its dev perplexity is below the
// bigram model's after 150 steps, and its 600 steps end within a minute in the page at 7.34,
// near the 7.26 of twice as many (bench/playground.py --task lm; docs/browser-edition.md has
// the numbers). The recipe still chooses what is not here: its byte-pair vocabulary, pre-norm,
// dropout 0.1, no label smoothing, the cosine schedule and its peak rate for d_model 64. Each
// is an option like any other, so the run is `transformer train --task lm --layers 2
// --d-model 64 ...` natively (gf_start's answer gives the whole line, "options").
constexpr std::string_view kLanguageModelDefaults =
    "layers=2&d-model=64&d-ff=256&heads=4&max-len=64&steps=600";

// The keys of an options line ("a=1&b=2": a, b).
std::vector<std::string> option_keys(std::string_view options) {
  std::vector<std::string> keys;
  while (!options.empty()) {
    const size_t end = std::min(options.find('&'), options.size());
    const std::string_view part = options.substr(0, end);
    options.remove_prefix(std::min(end + 1, options.size()));
    if (!part.empty()) keys.emplace_back(part.substr(0, part.find('=')));
  }
  return keys;
}

// options, after each default whose key it does not give: one line that names every setting
// the playground chose, so that a run can be repeated natively from it.
std::string with_defaults(std::string_view options, std::string_view defaults) {
  const std::vector<std::string> given = option_keys(options);
  std::string line;
  while (!defaults.empty()) {
    const size_t end = std::min(defaults.find('&'), defaults.size());
    const std::string_view part = defaults.substr(0, end);
    defaults.remove_prefix(std::min(end + 1, defaults.size()));
    if (std::find(given.begin(), given.end(), part.substr(0, part.find('='))) == given.end())
      line += fmt::format("{}&", part);
  }
  return line + std::string(options);
}

// The text a language model trains on when the learner gives none, generated here so that the
// page fetches nothing: the English side of the toy language (data/toy_language.h), one
// sentence a line, its 10,000 training sentences to train on and its 500 dev sentences, none
// of which is among them, for the perplexity. Its grammar of 53 words is small enough that the
// playground's model learns it in a minute, so that the samples go from noise to sentences
// while the learner watches, and it makes words agree across others ("these green old books
// like", "a small old tree does not"), which a bigram model, the baseline to beat, cannot
// follow. Always from seed 1, whatever the run's seed: two runs then compare on one text, and
// it is the first column of the files `transformer generate` writes by default
// (out/toy/train.tsv and dev.tsv), for the same run natively.
constexpr const char* kBuiltInTrain = "toy English (train)";
constexpr const char* kBuiltInDev = "toy English (dev)";

void write_sentences(const char* path, const std::vector<gf::data::AlignedPair>& pairs) {
  std::ofstream out(path, std::ios::binary);
  for (const gf::data::AlignedPair& pair : pairs) out << gf::data::join_words(pair.source) << '\n';
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path));
}

void write_built_in_text() {
  gf::Rng rng(1);
  const gf::data::ToyCorpus corpus = gf::data::generate_toy_corpus({}, rng);
  write_sentences(kBuiltInTrain, corpus.train);
  write_sentences(kBuiltInDev, corpus.dev);
}

// ---- Answers --------------------------------------------------------------------------------

Json status_of(const Engine& e) {
  if (!e.run) return {{"state", e.opened.model ? "opened" : "none"}};
  const Run& run = *e.run;
  const int64_t step = run.steps_done();
  Json status = {
      {"state", run.finished() ? "finished" : "ready"},
      {"step", step},
      {"steps", run.settings().steps},
      {"loss", step > 0 ? Json(run.losses().back()) : Json(nullptr)},
      {"lr", step > 0 ? Json(run.rates().back()) : Json(nullptr)},
      {"steps_per_s", e.step_seconds > 0 ? static_cast<double>(step) / e.step_seconds : 0.0},
      {"metric", metric_of(run)},
      {"score", e.score ? Json(*e.score) : Json(nullptr)},
      {"scored_at", e.scored_at}};
  // What the perplexity is of: "86 windows of the dev text" (the training text, without one).
  if (language_model(run)) status["scored_on"] = run.checks().check_set();
  if (!e.final_scores.empty()) status["final"] = e.final_scores;
  return status;
}

// reads: "text" for a model with a tokenizer, "ids" for one that reads token ids.
// decoder_only: a language model, which samples (gf_sample) rather than decodes.
Json model_settings(const gf::Transformer& model, const gf::data::Tokenizer* tokenizer,
                    const std::string& task, int64_t steps) {
  const gf::TransformerConfig& m = model.config;
  return {{"task", task},
          {"reads", tokenizer ? "text" : "ids"},
          {"decoder_only", m.decoder_only()},
          {"tokenizer", tokenizer ? Json(tokenizer->kind()) : Json(nullptr)},
          {"vocab_size", m.vocab_size},
          {"d_model", m.d_model},
          {"d_ff", m.d_ff},
          {"heads", m.heads},
          {"layers", m.decoder_only() ? m.decoder_layers : m.encoder_layers},
          {"max_len", m.max_len},
          {"dropout", m.dropout},
          {"norm_first", m.norm_first},
          {"learned_positions", m.learned_positions},
          {"steps", steps},
          {"parameters", model.parameter_count()},
          {"vector_unit", "one thread, WebAssembly SIMD"}};
}

Json settings_of(const Engine& e) {
  const Run& run = *e.run;
  const gf::training::RunSettings& s = run.settings();
  Json settings = model_settings(run.model(), run.tokenizer(),
                                 std::string(gf::training::name_of(s.task)), s.steps);
  settings["batch"] = s.batch;
  settings["lr"] = gf::training::schedule_rate(s);  // noam's factor, or the cosine's peak
  settings["warmup"] = s.warmup;
  settings["schedule"] = gf::training::name_of(s.schedule);
  settings["label_smoothing"] = s.label_smoothing;
  settings["examples"] = run.checks().page_pairs().size();  // for gf_attention
  settings["options"] = e.options;
  if (language_model(run)) settings["text"] = s.data;
  return settings;
}

Json maps_json(const gf::viz::AttentionMaps& maps) {
  return {{"source_tokens", maps.source_tokens},
          {"target_read", maps.target_read},
          {"target_next", maps.target_next},
          {"encoder", maps.encoder},
          {"decoder", maps.decoder},
          {"cross", maps.cross}};
}

// Sampled text is drawn as the run's page draws a language model's attention: the first
// kSampleWindow tokens (bos, then the text as the tokenizer reads it), since a heatmap of
// hundreds of tokens a side cannot be read.
constexpr size_t kSampleWindow = 32;
// The most tokens one gf_sample draws, so that a typing slip does not hold the worker for
// minutes: about a page of text.
constexpr int kMaxSampleLength = 1000;

// A seed from JavaScript, where every number is a double: a whole number that a double holds
// exactly.
uint64_t seed_from(double seed) {
  if (!(seed >= 0 && seed <= 9007199254740992.0 && std::floor(seed) == seed))
    throw std::invalid_argument(
        fmt::format("the seed must be a whole number from 0 to 2^53, got {}", seed));
  return static_cast<uint64_t>(seed);
}

}  // namespace

extern "C" {

// The files a learner's data is written to, in the module's file system; their names are what
// the library's messages call them ("pasted pairs:3: expected SOURCE<TAB>TARGET, ...",
// "your text:2: invalid UTF-8 ...").
constexpr const char* kPastedPairs = "pasted pairs";
constexpr const char* kYourText = "your text";

EMSCRIPTEN_KEEPALIVE const char* gf_start(const char* options, const char* data) {
  try {
    std::string line = options;
    gf::training::RunConfig config = gf::training::run_config_from_options(line);
    if (config.task == Task::Translate) {
      if (std::string_view(data).empty())
        throw std::invalid_argument(
            "task translate trains on pairs of your own: paste them, one SOURCE<TAB>TARGET a line");
      std::ofstream(kPastedPairs, std::ios::binary) << data;
      config.data = kPastedPairs;
    }
    if (config.task == Task::LanguageModel) {
      line = with_defaults(line, kLanguageModelDefaults);
      config = gf::training::run_config_from_options(line);
      // The learner's text is trained on and scored on itself, as pasted pairs are: a dev part
      // cut from it would leave the training text shorter, and its lines' numbers in messages
      // would no longer be the learner's.
      if (std::string_view(data).empty()) {
        write_built_in_text();
        config.data = kBuiltInTrain;
        config.dev = kBuiltInDev;
      } else {
        std::ofstream(kYourText, std::ios::binary) << data;
        config.data = kYourText;
      }
    }
    config.save = "playground.safetensors";  // in the page's memory; the run page's title
    // The attention snapshots of the run's page are kept (transformer train's 25 by default):
    // the playground shows attention through training from them.
    auto run = std::make_unique<Run>(config);
    Engine& e = engine();
    e = Engine{};  // the last run, or an opened checkpoint, ends here
    e.run = std::move(run);
    e.options = line;
    Json started = {{"settings", settings_of(e)}, {"status", status_of(e)}};
    return answer(started);
  } catch (const std::exception& e) {
    return error(e);
  }
}

EMSCRIPTEN_KEEPALIVE const char* gf_step(int steps, double milliseconds) {
  Engine& e = engine();
  if (!e.run) return answer(Json{{"error", "no run: start one first"}});
  try {
    const auto start = Clock::now();
    for (int i = 0; i < steps && !e.run->finished(); ++i) {
      const auto before = Clock::now();
      e.run->step();
      e.step_seconds += std::chrono::duration<double>(Clock::now() - before).count();
      if (std::chrono::duration<double, std::milli>(Clock::now() - start).count() >= milliseconds)
        break;
    }
    // A language model's last line, as `transformer train` prints it: the perplexity of the
    // whole dev text beside the bigram model's (training/run_checks.h). Of the last step's
    // weights: the page's run does not choose between checkpoints at its end.
    if (e.run->finished() && language_model(*e.run) && e.final_scores.empty())
      e.final_scores = e.run->final_scores();
    return answer(status_of(e));
  } catch (const std::exception& ex) {
    return error(ex);
  }
}

EMSCRIPTEN_KEEPALIVE const char* gf_status() {
  return answer(status_of(engine()));
}

EMSCRIPTEN_KEEPALIVE const char* gf_losses(int from) {
  const Engine& e = engine();
  if (!e.run) return answer(Json{{"from", 0}, {"losses", Json::array()}, {"rates", Json::array()}});
  const std::vector<float>&losses = e.run->losses(), &rates = e.run->rates();
  const auto first = std::clamp<std::ptrdiff_t>(from, 0, std::ssize(losses));
  return answer(Json{{"from", first},
                     {"losses", std::vector<float>(losses.begin() + first, losses.end())},
                     {"rates", std::vector<float>(rates.begin() + first, rates.end())}});
}

EMSCRIPTEN_KEEPALIVE const char* gf_score() {
  Engine& e = engine();
  if (!e.run) return answer(Json{{"error", "no run: start one first"}});
  try {
    Run& run = *e.run;
    if (language_model(run))
      e.score = run.checks().check_perplexity(run.model());
    else if (generated(run))
      e.score = gf::training::exact_match(run.model(), run.checks().page_pairs());
    else
      e.score = run.checks().check_bleu(run.model());
    e.scored_at = run.steps_done();
    return answer(status_of(e));
  } catch (const std::exception& ex) {
    return error(ex);
  }
}

EMSCRIPTEN_KEEPALIVE const char* gf_attention(int example) {
  Engine& e = engine();
  if (!e.run) return answer(Json{{"error", "no run: start one first"}});
  try {
    Run& run = *e.run;
    // A language model's examples are windows of its dev text (the training text without
    // one), 32 tokens each, read after bos: decoder self-attention only.
    const std::vector<gf::data::Pair> pairs = run.checks().page_pairs();
    if (example < 0 || example >= std::ssize(pairs))
      return answer(
          Json{{"error", fmt::format("no example {}: there are {}", example, pairs.size())}});
    const gf::data::Pair& pair = pairs[static_cast<size_t>(example)];
    const auto names = gf::training::token_names(run.tokenizer(), run.model().config);
    return answer(maps_json(gf::training::attention_maps(run.model(), pair.src, pair.tgt, names)));
  } catch (const std::exception& ex) {
    return error(ex);
  }
}

EMSCRIPTEN_KEEPALIVE const char* gf_page() {
  Engine& e = engine();
  if (!e.run) return answer(Json{{"error", "no run: the run's page needs one (start a run)"}});
  try {
    return answer(Json{{"html", gf::viz::run_page_html(e.run->page())}});
  } catch (const std::exception& ex) {
    return error(ex);
  }
}

EMSCRIPTEN_KEEPALIVE const char* gf_decode(const char* source, int beam) {
  Engine& e = engine();
  gf::Transformer* model = model_of(e);
  if (!model) return answer(Json{{"error", "no model: start a run or open a checkpoint first"}});
  if (model->config.decoder_only())
    return answer(Json{{"error",
                        "this model is a language model (the decoder alone): it has no source to "
                        "decode, it continues a prompt; sample from it instead"}});
  try {
    if (beam < 1) throw std::invalid_argument(fmt::format("beam must be positive, got {}", beam));
    // As `transformer decode` and `translate` decode a line, with their default length penalty.
    const gf::training::DecodedSource d =
        gf::training::decode_source(*model, tokenizer_of(e), source, {.beam = beam});
    const auto names = gf::training::token_names(tokenizer_of(e), model->config);
    return answer(
        Json{{"output", d.output},
             {"step", e.run ? e.run->steps_done() : 0},
             {"maps", maps_json(gf::training::attention_maps(*model, d.src, d.tgt, names))}});
  } catch (const std::exception& ex) {
    return error(ex);
  }
}

// As `transformer sample` draws one sample (cli/sample.cpp): the prompt, then `length` tokens,
// each drawn from the model's distribution after the temperature, top-k and top-p, stopping
// early at eos; the same seed gives the same text from the same model. The attention is the
// model's as it reads the text back (its first kSampleWindow tokens).
EMSCRIPTEN_KEEPALIVE const char* gf_sample(const char* prompt, double temperature, int top_k,
                                           double top_p, int length, double seed) {
  Engine& e = engine();
  gf::Transformer* model = model_of(e);
  const gf::data::Tokenizer* tokenizer = tokenizer_of(e);
  if (!model) return answer(Json{{"error", "no model: start a run or open a checkpoint first"}});
  if (!model->config.decoder_only() || !tokenizer)
    return answer(Json{{"error",
                        "this model translates a source (decode it); sampling continues a text "
                        "with a language model (task lm)"}});
  try {
    if (length < 1 || length > kMaxSampleLength)
      throw std::invalid_argument(
          fmt::format("length must be from 1 to {} tokens, got {}", kMaxSampleLength, length));
    const gf::SampleOptions options = {.length = length,
                                       .temperature = static_cast<float>(temperature),
                                       .top_k = top_k,
                                       .top_p = static_cast<float>(top_p),
                                       .stop_at_eos = true};
    const std::string text =
        gf::training::sample_texts(*model, *tokenizer, prompt, options, seed_from(seed)).front();
    std::vector<int32_t> read = {model->config.bos_id};
    for (const int32_t id : tokenizer->encode(text)) {
      if (read.size() > kSampleWindow) break;
      read.push_back(id);
    }
    Json sampled = {{"text", text}, {"prompt", prompt}, {"step", e.run ? e.run->steps_done() : 0}};
    if (read.size() >= 2)
      sampled["maps"] = maps_json(gf::training::attention_maps(
          *model, {}, read, gf::training::token_names(tokenizer, model->config)));
    return answer(sampled);
  } catch (const std::exception& ex) {
    return error(ex);
  }
}

EMSCRIPTEN_KEEPALIVE const char* gf_save() {
  Engine& e = engine();
  gf::Transformer* model = model_of(e);
  if (!model) return answer(Json{{"error", "no model: start a run or open a checkpoint first"}});
  try {
    // The weights as they are now: what `transformer train --save` writes at this step.
    const std::string path = "/run/page.safetensors";
    gf::training::save_model(path, *model, tokenizer_of(e));
    return answer(Json{{"path", path}});
  } catch (const std::exception& ex) {
    return error(ex);
  }
}

EMSCRIPTEN_KEEPALIVE const char* gf_open(const char* path, const char* name) {
  Engine& e = engine();
  try {
    gf::training::ModelAndTokenizer opened = gf::training::load_model_and_tokenizer(path);
    e = Engine{};  // the run ends, once the checkpoint has loaded
    e.opened = std::move(opened);
    return answer(Json{
        {"settings", model_settings(*e.opened.model, e.opened.tokenizer.get(), "checkpoint", 0)},
        {"status", status_of(e)}});
  } catch (const std::exception& ex) {
    return answer(Json{{"error", with_name(ex.what(), path, name)}});
  }
}

}  // extern "C"
