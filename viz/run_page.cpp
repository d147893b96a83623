#include "viz/run_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>

#include "viz/atomic_file.h"
#include "viz/page/run_page_template.h"

namespace gf::viz {

namespace {

// ordered_json keeps the keys in the order docs/run-page.md lists them, which makes a page's
// data easy to read by eye.
using Json = nlohmann::ordered_json;

constexpr std::string_view kFormat = "gradformer-run-page/1";

Json pairs_json(const std::vector<std::pair<std::string, std::string>>& pairs) {
  Json rows = Json::array();
  for (const auto& [first, second] : pairs) rows.push_back(Json::array({first, second}));
  return rows;
}

// Whole numbers are written without the ".0" a double would get ("600", not "600.0"): most x
// values are steps, and a long curve has thousands of them.
Json number_json(double value) {
  if (!std::isfinite(value)) return nullptr;
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (value == std::trunc(value) && std::abs(value) < kExactIntegers)
    return static_cast<int64_t>(value);
  return value;
}

Json curve_json(const Curve& curve) {
  Json series = Json::array();
  for (const CurveSeries& one : curve.series) {
    if (one.xs.size() != one.ys.size())
      throw std::invalid_argument(
          fmt::format("run page: curve '{}', series '{}': {} x values but {} y values", curve.title,
                      one.name, one.xs.size(), one.ys.size()));
    Json xs = Json::array(), ys = Json::array();
    for (const double x : one.xs) xs.push_back(number_json(x));
    for (const double y : one.ys) ys.push_back(number_json(y));
    series.push_back(
        {{"name", one.name}, {"x", std::move(xs)}, {"y", std::move(ys)}, {"faint", one.faint}});
  }
  return {{"title", curve.title},
          {"x_label", curve.x_label},
          {"y_label", curve.y_label},
          {"log_y", curve.log_y},
          {"series", std::move(series)}};
}

Json samples_json(const std::vector<Sample>& samples) {
  Json rows = Json::array();
  for (const Sample& sample : samples)
    rows.push_back({{"source", sample.source},
                    {"reference", sample.reference},
                    {"output", sample.output},
                    {"score", number_json(sample.score)}});
  return rows;
}

// A weight in thousandths: a probability in [0, 1] becomes a whole number in [0, 1000]. What
// is not a number (a bug upstream) shows as 0 rather than breaking the page.
int thousandths(float weight) {
  if (std::isnan(weight)) return 0;
  const double scaled = std::clamp(static_cast<double>(weight) * 1000.0, 0.0, 1000.0);
  return static_cast<int>(std::lround(scaled));
}

// One use of attention: its name in the JSON and the sizes of its matrices.
struct Kind {
  const char* name;
  size_t rows, columns;
};

Json matrices_json(const AttentionMaps::Matrices& matrices, const Kind& kind,
                   const std::string& owner) {
  Json layers = Json::array();
  for (size_t layer = 0; layer < matrices.size(); ++layer) {
    Json heads = Json::array();
    for (size_t head = 0; head < matrices[layer].size(); ++head) {
      const std::vector<float>& matrix = matrices[layer][head];
      if (matrix.size() != kind.rows * kind.columns)
        throw std::invalid_argument(
            fmt::format("run page: {}, {} layer {} head {}: {} weights, expected {} x {} = {}",
                        owner, kind.name, layer, head, matrix.size(), kind.rows, kind.columns,
                        kind.rows * kind.columns));
      Json weights = Json::array();
      for (const float weight : matrix) weights.push_back(thousandths(weight));
      heads.push_back(std::move(weights));
    }
    layers.push_back(std::move(heads));
  }
  return layers;
}

// Adds the tokens and the three kinds of attention of maps to object. owner names the
// example or snapshot in error messages.
void add_maps(Json& object, const AttentionMaps& maps, const std::string& owner) {
  const size_t source = maps.source_tokens.size(), target = maps.target_next.size();
  if (maps.target_read.size() != target)
    throw std::invalid_argument(
        fmt::format("run page: {}: {} tokens read by the decoder but {} predicted", owner,
                    maps.target_read.size(), target));
  object["source_tokens"] = maps.source_tokens;
  object["target_read"] = maps.target_read;
  object["target_next"] = maps.target_next;
  object["encoder"] = matrices_json(maps.encoder, {"encoder", source, source}, owner);
  object["decoder"] = matrices_json(maps.decoder, {"decoder", target, target}, owner);
  object["cross"] = matrices_json(maps.cross, {"cross", target, source}, owner);
}

Json attention_json(const std::vector<AttentionExample>& examples) {
  Json rows = Json::array();
  for (size_t i = 0; i < examples.size(); ++i) {
    Json example = {{"label", examples[i].label}};
    add_maps(example, examples[i].maps,
             fmt::format("attention example {} ('{}')", i, examples[i].label));
    rows.push_back(std::move(example));
  }
  return rows;
}

Json snapshots_json(const std::vector<AttentionSnapshot>& snapshots) {
  Json rows = Json::array();
  for (const AttentionSnapshot& snapshot : snapshots) {
    Json row = {{"step", snapshot.step}};
    add_maps(row, snapshot.maps, fmt::format("attention snapshot at step {}", snapshot.step));
    rows.push_back(std::move(row));
  }
  return rows;
}

// JSON inside <script> ends at the first "</script>", whatever the JSON means. Outside strings
// JSON has no '<', so writing every '<' as \u003c keeps the text the same JSON and leaves the
// HTML parser nothing to stop at (nor a "<!--" to start a comment).
std::string escape_for_script(const std::string& json) {
  std::string escaped;
  escaped.reserve(json.size() + json.size() / 64);
  for (const char c : json) {
    if (c == '<')
      escaped += "\\u003c";
    else
      escaped += c;
  }
  return escaped;
}

std::string escape_html(std::string_view text) {
  std::string escaped;
  for (const char c : text) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

// Replaces the one occurrence of marker in page by content. The template is ours, so a
// missing marker is a bug here, not bad input.
void fill(std::string& page, std::string_view marker, std::string_view content) {
  const size_t at = page.find(marker);
  if (at == std::string::npos)
    throw std::logic_error(fmt::format("run page: the template has no {}", marker));
  page.replace(at, marker.size(), content);
}

}  // namespace

std::string run_page_json(const RunPage& page) {
  const Json json = {
      {"format", kFormat},
      {"title", page.title},
      {"subtitle", page.subtitle},
      {"configuration", pairs_json(page.configuration)},
      {"data", pairs_json(page.data)},
      {"data_examples", pairs_json(page.data_examples)},
      {"timings", pairs_json(page.timings)},
      {"curves",
       [&] {
         Json curves = Json::array();
         for (const Curve& curve : page.curves) curves.push_back(curve_json(curve));
         return curves;
       }()},
      {"sample_metric", page.sample_metric},
      {"samples", samples_json(page.samples)},
      {"attention", attention_json(page.attention)},
      {"snapshots", snapshots_json(page.snapshots)},
  };
  // A token cut inside a UTF-8 sequence (a byte-level tokenizer's piece) is shown as U+FFFD
  // instead of making the whole page fail. The text is ready to inline in a <script>.
  return escape_for_script(json.dump(-1, ' ', false, Json::error_handler_t::replace));
}

std::string run_page_html(const RunPage& page) {
  // The markers stand in this order in the template; filling them last one first means that
  // each is found before any inserted text, so a token that reads "@@TITLE@@" stays a token.
  std::string html(page::kRunPageHtml);
  fill(html, "@@SCRIPT@@", page::kRunPageJs);
  fill(html, "@@RUN_DATA@@", run_page_json(page));
  fill(html, "@@STYLE@@", page::kRunPageCss);
  fill(html, "@@TITLE@@", escape_html(page.title.empty() ? "training run" : page.title));
  return html;
}

void write_run_page(const RunPage& page, const std::string& path) {
  write_file_atomically(run_page_html(page), path, "run page");
}

}  // namespace gf::viz
