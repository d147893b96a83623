#include "training/run_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "data/batch.h"
#include "data/bleu.h"
#include "nn/module.h"
#include "training/evaluate.h"

namespace gf::training {

namespace {

// Each layer's [1, H, T, S] probabilities as [layer][head] -> the T x S values.
viz::AttentionMaps::Matrices per_head(const std::vector<Tensor>& layers) {
  viz::AttentionMaps::Matrices matrices;
  for (const Tensor& probs : layers) {
    const int64_t size = probs.dim(2) * probs.dim(3);
    auto& heads = matrices.emplace_back();
    for (int64_t h = 0; h < probs.dim(1); ++h)
      heads.emplace_back(probs.data() + h * size, probs.data() + (h + 1) * size);
  }
  return matrices;
}

std::vector<std::string> named(std::span<const int32_t> ids, const TokenNames& names) {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (int32_t id : ids) out.push_back(names(id));
  return out;
}

using nlohmann::json;

// Attention weights are kept in thousandths, as the page shows them (viz/run_page.h): a
// snapshot then takes a quarter of the room, and nothing a reader could see is lost.
json in_thousandths(const viz::AttentionMaps::Matrices& matrices) {
  json layers = json::array();
  for (const auto& heads : matrices) {
    json& layer = layers.emplace_back(json::array());
    for (const std::vector<float>& matrix : heads) {
      json& values = layer.emplace_back(json::array());
      for (float w : matrix) values.push_back(std::lround(std::clamp(w, 0.0f, 1.0f) * 1000.0f));
    }
  }
  return layers;
}

viz::AttentionMaps::Matrices from_thousandths(const json& layers) {
  viz::AttentionMaps::Matrices matrices;
  for (const json& layer : layers) {
    auto& heads = matrices.emplace_back();
    for (const json& values : layer) {
      auto& matrix = heads.emplace_back();
      for (const json& v : values) matrix.push_back(v.get<float>() / 1000.0f);
    }
  }
  return matrices;
}

json snapshot_json(const viz::AttentionSnapshot& s) {
  const viz::AttentionMaps& m = s.maps;
  return {{"step", s.step},
          {"source_tokens", m.source_tokens},
          {"target_read", m.target_read},
          {"target_next", m.target_next},
          {"encoder", in_thousandths(m.encoder)},
          {"decoder", in_thousandths(m.decoder)},
          {"cross", in_thousandths(m.cross)}};
}

viz::AttentionSnapshot snapshot_of(const json& j) {
  viz::AttentionSnapshot s;
  s.step = j.at("step").get<int64_t>();
  viz::AttentionMaps& m = s.maps;
  j.at("source_tokens").get_to(m.source_tokens);
  j.at("target_read").get_to(m.target_read);
  j.at("target_next").get_to(m.target_next);
  m.encoder = from_thousandths(j.at("encoder"));
  m.decoder = from_thousandths(j.at("decoder"));
  m.cross = from_thousandths(j.at("cross"));
  return s;
}

std::string seconds_text(double seconds) {
  return seconds < 120 ? fmt::format("{:.1f} s", seconds)
                       : fmt::format("{:.0f} min {:.0f} s", std::floor(seconds / 60),
                                     std::fmod(seconds, 60.0));
}

}  // namespace

TokenNames token_names(const data::Tokenizer* tokenizer, const TransformerConfig& config) {
  if (tokenizer)
    return [tokenizer](int32_t id) {
      return tokenizer->label(id);
    };
  return [config](int32_t id) -> std::string {
    if (id == config.pad_id) return "<pad>";
    if (id == config.bos_id) return "<s>";
    if (id == config.eos_id) return "</s>";
    if (id == data::kUnk) return "<unk>";
    return std::to_string(id);
  };
}

std::string token_text(std::span<const int32_t> ids, const TokenNames& names) {
  return fmt::format("{}", fmt::join(named(ids, names), " "));
}

viz::AttentionMaps attention_maps(Transformer& model, std::span<const int32_t> src,
                                  std::span<const int32_t> tgt, const TokenNames& names) {
  if (tgt.size() < 2)
    throw std::invalid_argument(fmt::format(
        "attention maps: the target needs <s> and at least one more token, not {}", tgt.size()));
  const std::span<const int32_t> read = tgt.first(tgt.size() - 1), next = tgt.subspan(1);
  nn::EvalScope eval(model);
  nn::RecordingAttention recording(model.attention_modules());
  NoGrad no_grad;
  model.forward(IndexTensor::from({1, std::ssize(src)}, {src.begin(), src.end()}),
                IndexTensor::from({1, std::ssize(read)}, {read.begin(), read.end()}));
  return {.source_tokens = named(src, names),
          .target_read = named(read, names),
          .target_next = named(next, names),
          .encoder = per_head(model.attention(AttentionKind::EncoderSelf)),
          .decoder = per_head(model.attention(AttentionKind::DecoderSelf)),
          .cross = per_head(model.attention(AttentionKind::Cross))};
}

std::vector<int64_t> snapshot_steps(int64_t last_step, int64_t count) {
  std::vector<int64_t> steps;
  if (count < 1 || last_step < 0) return steps;
  steps.push_back(0);
  for (int64_t k = 1; k < count; ++k) {
    const int64_t step = k * last_step / (count - 1);
    if (step > steps.back()) steps.push_back(step);
  }
  return steps;
}

std::string PageHistory::to_json() const {
  json snapshots_json = json::array();
  for (const viz::AttentionSnapshot& s : snapshots) snapshots_json.push_back(snapshot_json(s));
  json j{{"metric", metric},
         {"metric_steps", metric_steps},
         {"metric_values", metric_values},
         {"snapshots", snapshots_json},
         {"training_seconds", training_seconds},
         {"checking_seconds", checking_seconds},
         {"target_tokens", target_tokens},
         {"sequences", sequences}};
  if (!samples.empty()) j["samples"] = samples;  // a language model's only
  return j.dump();
}

PageHistory PageHistory::from_json(const std::string& text, const std::string& source) {
  try {
    const json j = json::parse(text);
    PageHistory h;
    j.at("metric").get_to(h.metric);
    j.at("metric_steps").get_to(h.metric_steps);
    j.at("metric_values").get_to(h.metric_values);
    for (const json& s : j.at("snapshots")) h.snapshots.push_back(snapshot_of(s));
    if (j.contains("samples")) j.at("samples").get_to(h.samples);  // added with language models
    j.at("training_seconds").get_to(h.training_seconds);
    j.at("checking_seconds").get_to(h.checking_seconds);
    j.at("target_tokens").get_to(h.target_tokens);
    j.at("sequences").get_to(h.sequences);
    if (h.metric_steps.size() != h.metric_values.size())
      throw std::invalid_argument("metric_steps and metric_values differ in length");
    return h;
  } catch (const std::exception& e) {
    throw FormatError(fmt::format("{}: metadata \"{}\" is not a page history: {}", source,
                                  "history.page", e.what()));
  }
}

PageRecorder::PageRecorder(data::Pair pair, TokenNames names, Metric metric, int64_t last_step,
                           int64_t count, PageHistory history)
    : pair_(std::move(pair)),
      names_(std::move(names)),
      metric_(std::move(metric)),
      steps_(snapshot_steps(last_step, count)),
      history_(std::move(history)) {
  history_.metric = metric_.name;
}

bool PageRecorder::at_step(Transformer& model, int64_t step) {
  if (!std::binary_search(steps_.begin(), steps_.end(), step)) return false;
  // A resumed run may reach a step its first part recorded already (it saved there).
  if (!history_.snapshots.empty() && history_.snapshots.back().step >= step) return false;
  history_.snapshots.push_back(
      {.step = step, .maps = attention_maps(model, pair_.src, pair_.tgt, names_)});
  history_.metric_steps.push_back(static_cast<double>(step));
  // Two decimals are all a reader can see, and keep the page's JSON short.
  history_.metric_values.push_back(std::round(metric_.score(model) * 100.0) / 100.0);
  if (metric_.sample) history_.samples.emplace_back(step, metric_.sample(model));
  return true;
}

viz::Facts model_facts(const Transformer& model) {
  const TransformerConfig& c = model.config;
  return {{"parameters", fmt::format("{}", model.parameter_count())},
          {"d_model", fmt::format("{}", c.d_model)},
          {"d_ff", fmt::format("{}", c.d_ff)},
          {"heads", fmt::format("{} of {} dimensions", c.heads, c.d_model / c.heads)},
          {"layers", fmt::format("{} encoder, {} decoder", c.encoder_layers, c.decoder_layers)},
          {"vocabulary", fmt::format("{}{}", c.vocab_size, c.tied ? ", embeddings tied" : "")},
          {"normalisation", c.norm_first ? "pre-norm" : "post-norm (as in the paper)"},
          {"positions",
           c.learned_positions ? "learned (Table 3, row (E))" : "sinusoidal (as in the paper)"},
          {"max_len", fmt::format("{}", c.max_len)}};
}

std::vector<float> moving_average(std::span<const float> values, double span) {
  const double past = 1.0 - 1.0 / std::max(span, 1.0);
  std::vector<float> smoothed;
  smoothed.reserve(values.size());
  double average = 0.0, weight = 0.0;
  for (const float value : values) {
    average = past * average + (1.0 - past) * value;
    weight = past * weight + (1.0 - past);
    smoothed.push_back(static_cast<float>(average / weight));
  }
  return smoothed;
}

double smoothing_span(size_t steps) {
  return std::max(10.0, static_cast<double>(steps) / 50.0);
}

std::vector<viz::Curve> training_curves(std::span<const float> losses, std::span<const float> rates,
                                        const PageHistory& history, const std::string& loss_name) {
  auto by_step = [](std::span<const float> values) {
    viz::CurveSeries series;
    for (size_t i = 0; i < values.size(); ++i) {
      series.xs.push_back(static_cast<double>(i + 1));
      series.ys.push_back(static_cast<double>(values[i]));
    }
    return series;
  };
  std::vector<viz::Curve> curves;
  if (!losses.empty()) {
    viz::CurveSeries loss = by_step(losses);
    loss.name = "each step";
    loss.faint = true;
    const double span = smoothing_span(losses.size());
    viz::CurveSeries average = by_step(moving_average(losses, span));
    average.name = fmt::format("moving average, ~{:.0f} steps", span);
    curves.push_back({.title = fmt::format("loss ({})", loss_name),
                      .y_label = "loss",
                      .log_y = true,
                      .series = {loss, average}});
  }
  if (!rates.empty()) {
    viz::CurveSeries rate = by_step(rates);
    rate.name = "learning rate";
    curves.push_back({.title = "learning rate (§5.3)", .y_label = "rate", .series = {rate}});
  }
  if (!history.metric_steps.empty())
    curves.push_back(
        {.title = history.metric,
         .y_label = history.metric.substr(0, history.metric.find(',')),
         .series = {
             {.name = history.metric, .xs = history.metric_steps, .ys = history.metric_values}}});
  return curves;
}

viz::Facts timing_facts(const PageHistory& history, int64_t steps) {
  const double seconds = history.training_seconds;
  if (seconds <= 0.0 || steps <= 0) return {};
  viz::Facts facts = {
      {"training", seconds_text(seconds)},
      {"per step", fmt::format("{:.1f} ms", 1000.0 * seconds / static_cast<double>(steps))}};
  if (history.target_tokens > 0)
    facts.emplace_back("target tokens per second",
                       fmt::format("{:.0f}", static_cast<double>(history.target_tokens) / seconds));
  if (history.sequences > 0)
    facts.emplace_back("sequences per second",
                       fmt::format("{:.0f}", static_cast<double>(history.sequences) / seconds));
  facts.emplace_back("checks and snapshots", seconds_text(history.checking_seconds));
  return facts;
}

namespace {

// The settings of a run, in the order a reader looks for them, as "--flag" rows; those left at
// "no value" (an empty path, a 0 that means "none" or "the default") are left out.
viz::Facts setting_facts(const nn::Metadata& settings, std::initializer_list<const char*> flags) {
  viz::Facts facts;
  for (const char* flag : flags) {
    const auto it = settings.find(flag);
    if (it == settings.end() || it->second.empty() || it->second == "0") continue;
    facts.emplace_back(fmt::format("--{}", flag), it->second);
  }
  return facts;
}

}  // namespace

RunPageHeader trained_run_header(const std::string& checkpoint, const nn::Metadata& settings,
                                 int64_t steps) {
  const auto task = settings.find("task");
  // Each kind of task has its own data flags: those of the other kinds keep their defaults in
  // the settings and would only mislead here.
  const bool text =
      task != settings.end() && (task->second == "translate" || task->second == "toy-translation");
  const bool language_model = task != settings.end() && task->second == "lm";
  const auto smoothing = settings.find("label-smoothing");
  return {.title = checkpoint,
          .subtitle = task == settings.end()
                          ? "a checkpoint without its training state"
                          : fmt::format("{} task, {} steps", task->second, steps),
          .settings = setting_facts(
              settings, {"optimizer", "schedule", "lr", "warmup", text ? "batch-tokens" : "batch",
                         "label-smoothing", "dropout", "clip", "seed"}),
          .data = text ? setting_facts(settings,
                                       {"task", "data", "dev", "split", "tokenizer", "vocab-size"})
                  : language_model
                      ? setting_facts(settings, {"task", "data", "dev", "tokenizer", "vocab-size"})
                      : setting_facts(settings, {"task", "pairs", "min-length", "length"}),
          .loss = smoothing != settings.end() && smoothing->second == "0"
                      ? "cross-entropy"
                      : "label-smoothed cross-entropy, §5.4"};
}

viz::RunPage run_page(const RunPageHeader& header, const Transformer& model,
                      std::span<const float> losses, std::span<const float> rates,
                      const PageHistory& history) {
  viz::RunPage page{.title = header.title,
                    .subtitle = header.subtitle,
                    .configuration = model_facts(model),
                    .data = header.data};
  page.configuration.insert(page.configuration.end(), header.settings.begin(),
                            header.settings.end());
  page.curves = training_curves(losses, rates, history, header.loss);
  page.timings = timing_facts(history, std::ssize(losses));
  page.snapshots = history.snapshots;
  // A language model's samples, newest first: what it writes now, then how it got there.
  for (auto it = history.samples.rbegin(); it != history.samples.rend(); ++it)
    page.samples.push_back({.source = fmt::format("step {}", it->first), .output = it->second});
  return page;
}

std::vector<viz::Sample> translation_samples(Transformer& model, const data::Tokenizer& tokenizer,
                                             std::span<const data::SentencePair> pairs) {
  const TranslationScores scores = score_translations(model, tokenizer, pairs);
  std::vector<viz::Sample> samples;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const std::string& output = scores.hypotheses[i];
    // chrF rather than BLEU for one sentence: sentence BLEU is 0 whenever no 4-gram matches,
    // which is most short sentences (data/bleu.h).
    const double chrf = data::corpus_chrf(std::span<const std::string>(&output, 1),
                                          std::span<const std::string>(&pairs[i].target, 1))
                            .score;
    samples.push_back(
        {.source = pairs[i].source, .reference = pairs[i].target, .output = output, .score = chrf});
  }
  return samples;
}

std::vector<viz::Sample> sequence_samples(Transformer& model, std::span<const data::Pair> pairs,
                                          const TokenNames& names) {
  std::vector<std::vector<int32_t>> sources;
  for (const data::Pair& p : pairs) sources.push_back(p.src);
  const std::vector<TokenIds> outputs = decode_corpus(model, sources, {.by_length = false});
  std::vector<viz::Sample> samples;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const data::Pair& p = pairs[i];
    const bool exact = decodes_to(outputs[i], p.tgt, model.config.eos_id);
    // The reference as the output is written: without bos and the final eos.
    std::span<const int32_t> reference = std::span<const int32_t>(p.tgt).subspan(1);
    if (!reference.empty() && reference.back() == model.config.eos_id)
      reference = reference.first(reference.size() - 1);
    samples.push_back({.source = token_text(p.src, names),
                       .reference = token_text(reference, names),
                       .output = token_text(outputs[i], names),
                       .score = exact ? 1.0 : 0.0});
  }
  return samples;
}

}  // namespace gf::training
