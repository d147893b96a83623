// The browser edition's engine: one training::Run, which the page's Web Worker drives through
// the C functions below (JavaScript calls them with Emscripten's ccall). Each returns a JSON
// text, valid until the next call; a failure is {"error": "..."} carrying the library's own
// message, and leaves the run as it was.
//
//   gf_start("task=copy&heads=1")  a new run of these settings (training/run_options.h)
//   gf_step(steps, milliseconds)   train until either is used up, or the run ends
//   gf_status()                    where the run stands
//   gf_losses(from)                the losses and rates of the steps from `from` on
//   gf_score()                     exact copies (a generated task) or BLEU (text), scored now
//   gf_attention(example)          every attention map of one of the run's example pairs
//
// The page runs on one thread with WebAssembly's 128-bit SIMD (kernels/simd.h): a page opened
// from a file gets no SharedArrayBuffer, so no threads.
#include <emscripten/emscripten.h>
#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "training/evaluate.h"
#include "training/run.h"
#include "training/run_options.h"
#include "training/run_page.h"

namespace {

using gf::training::Run;
using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

struct Engine {
  std::unique_ptr<Run> run;
  double step_seconds = 0.0;  // of the steps alone, for the speed on screen
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

Json status_of(const Engine& e) {
  if (!e.run) return {{"state", "none"}};
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

Json settings_of(const Run& run) {
  const gf::TransformerConfig& m = run.model().config;
  return {{"task", gf::training::name_of(run.settings().task)},
          {"vocab_size", m.vocab_size},
          {"d_model", m.d_model},
          {"d_ff", m.d_ff},
          {"heads", m.heads},
          {"layers", m.encoder_layers},
          {"dropout", m.dropout},
          {"norm_first", m.norm_first},
          {"learned_positions", m.learned_positions},
          {"steps", run.settings().steps},
          {"parameters", run.model().parameter_count()},
          {"vector_unit", "one thread, WebAssembly SIMD"}};
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

EMSCRIPTEN_KEEPALIVE const char* gf_start(const char* options) {
  try {
    gf::training::RunConfig config = gf::training::run_config_from_options(options);
    config.save = "/run/model.safetensors";  // in the page's memory
    config.snapshots = 0;                    // the page asks for attention itself
    auto run = std::make_unique<Run>(config);
    Engine& e = engine();
    e = Engine{};
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

}  // extern "C"
