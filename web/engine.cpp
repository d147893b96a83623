// The browser edition's engine: one training::Run, which the page's Web Worker drives through
// the C functions below (JavaScript calls them with Emscripten's ccall). Each returns a JSON
// text, valid until the next call; a failure is {"error": "..."} carrying the library's own
// message, and leaves the run as it was.
//
//   gf_start("task=copy&heads=1", pairs)  a new run of these settings (training/run_options.h);
//                                  with task=translate, on pairs: SOURCE<TAB>TARGET lines
//   gf_step(steps, milliseconds)   train until either is used up, or the run ends
//   gf_status()                    where the run stands
//   gf_losses(from)                the losses and rates of the steps from `from` on
//   gf_score()                     exact copies (a generated task) or BLEU (text), scored now
//   gf_attention(example)          every attention map of one of the run's example pairs
//   gf_page()                      the run's page as it stands (viz/run_page.h), as HTML
//   gf_decode(source, beam)        the model's output for a source, with its attention
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

#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "training/evaluate.h"
#include "training/model_file.h"
#include "training/run.h"
#include "training/run_options.h"
#include "training/run_page.h"

namespace {

using gf::training::Run;
using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

struct Engine {
  std::unique_ptr<Run> run;
  gf::training::ModelAndTokenizer opened;  // a checkpoint gf_open read, when there is no run
  double step_seconds = 0.0;               // of the steps alone, for the speed on screen
  std::optional<double> score;
  int64_t scored_at = -1;
  std::string answer;  // the text the last call returned
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

bool generated(const Run& run) {
  return !gf::training::is_text(run.settings().task);
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
      {"metric", generated(run) ? "exact" : "bleu"},
      {"score", e.score ? Json(*e.score) : Json(nullptr)},
      {"scored_at", e.scored_at}};
  return status;
}

// reads: "text" for a model with a tokenizer, "ids" for one that reads token ids.
Json model_settings(const gf::Transformer& model, const gf::data::Tokenizer* tokenizer,
                    const std::string& task, int64_t steps) {
  const gf::TransformerConfig& m = model.config;
  return {{"task", task},
          {"reads", tokenizer ? "text" : "ids"},
          {"vocab_size", m.vocab_size},
          {"d_model", m.d_model},
          {"d_ff", m.d_ff},
          {"heads", m.heads},
          {"layers", m.encoder_layers},
          {"dropout", m.dropout},
          {"norm_first", m.norm_first},
          {"learned_positions", m.learned_positions},
          {"steps", steps},
          {"parameters", model.parameter_count()},
          {"vector_unit", "one thread, WebAssembly SIMD"}};
}

Json settings_of(const Run& run) {
  return model_settings(run.model(), run.tokenizer(),
                        std::string(gf::training::name_of(run.settings().task)),
                        run.settings().steps);
}

Json maps_json(const gf::viz::AttentionMaps& maps) {
  return {{"source_tokens", maps.source_tokens},
          {"target_read", maps.target_read},
          {"target_next", maps.target_next},
          {"encoder", maps.encoder},
          {"decoder", maps.decoder},
          {"cross", maps.cross}};
}

}  // namespace

extern "C" {

// The file a learner's pasted pairs are written to, in the module's file system; its name is
// what the library's messages call it ("pasted pairs:3: expected SOURCE<TAB>TARGET, ...").
constexpr const char* kPastedPairs = "pasted pairs";

EMSCRIPTEN_KEEPALIVE const char* gf_start(const char* options, const char* pairs) {
  try {
    gf::training::RunConfig config = gf::training::run_config_from_options(options);
    if (config.task == gf::training::Task::Translate) {
      if (std::string_view(pairs).empty())
        throw std::invalid_argument(
            "task translate trains on pairs of your own: paste them, one SOURCE<TAB>TARGET a line");
      std::ofstream(kPastedPairs, std::ios::binary) << pairs;
      config.data = kPastedPairs;
    }
    config.save = "playground.safetensors";  // in the page's memory; the run page's title
    // The attention snapshots of the run's page are kept (transformer train's 25 by default):
    // the playground shows attention through training from them.
    auto run = std::make_unique<Run>(config);
    Engine& e = engine();
    e = Engine{};  // the last run, or an opened checkpoint, ends here
    e.run = std::move(run);
    Json started = {{"settings", settings_of(*e.run)}, {"status", status_of(e)}};
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
    e.score = generated(run) ? gf::training::exact_match(run.model(), run.checks().page_pairs())
                             : run.checks().check_bleu(run.model());
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
