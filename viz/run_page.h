// One page per training run: a single self-contained HTML file that a learner opens in any
// browser, offline. The run's data is inlined as JSON; plain JavaScript draws the curves, the
// samples and an attention explorer as SVG. Nothing is loaded from anywhere else: no CDN, no
// second file, no server.
//
// This header holds what the page shows, as plain data, so that viz knows nothing of models:
// the training layer fills a RunPage (training/run_page.h) and viz turns it into the page.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gf::viz {

// Rows of a small table: ("d_model", "64"), ("training pairs", "9,000").
using Facts = std::vector<std::pair<std::string, std::string>>;

struct CurveSeries {
  std::string name{};
  std::vector<double> xs{};  // one per y (the step, say)
  std::vector<double> ys{};  // NaN or an infinity leaves a gap (written as null)
  // Drawn thin and light, in the colour of the series after it: each step's loss under its
  // moving average, a band of noise behind the line to read.
  bool faint = false;
};

struct Curve {
  std::string title{};
  std::string x_label = "step";
  std::string y_label{};
  bool log_y = false;
  std::vector<CurveSeries> series{};
};

// One decoded sequence beside its reference, with its score in RunPage::sample_metric.
struct Sample {
  std::string source{}, reference{}, output{};
  double score = 0.0;
};

// Attention probabilities (Vaswani et al. 2017, §3.2.3) of one sentence pair, for every layer
// and head of the three uses of attention, from one teacher-forced forward pass. The decoder
// reads target_read (<s> y1 ... yn) and its position i predicts target_next[i] (y1 ... yn
// </s>); rows are queries and columns keys:
//   encoder[layer][head]  [source x source]            rows and columns: source_tokens
//   decoder[layer][head]  [target x target], causal    rows: target_next, columns: target_read
//   cross[layer][head]    [target x source]            rows: target_next, columns: source_tokens
// Each matrix is row-major, its rows summing to 1.
struct AttentionMaps {
  std::vector<std::string> source_tokens{}, target_read{}, target_next{};
  using Matrices = std::vector<std::vector<std::vector<float>>>;  // [layer][head] -> values
  Matrices encoder{}, decoder{}, cross{};
};

struct AttentionExample {
  std::string label{};  // "dev pair 3", "--src 1"
  AttentionMaps maps{};
};

// The attention of one fixed sentence as it stood after `step` training steps (0: at
// initialisation), so that the page can show it forming.
struct AttentionSnapshot {
  int64_t step = 0;
  AttentionMaps maps{};
};

struct RunPage {
  std::string title{};     // "out/model.safetensors"
  std::string subtitle{};  // "copy task, 600 steps"
  Facts configuration{};   // the model and training settings
  Facts data{};            // sizes, tokenizer
  std::vector<std::pair<std::string, std::string>> data_examples{};  // a few (source, target)
  Facts timings{};                                                   // "training", "12.3 s"
  std::vector<Curve> curves{};  // loss, learning rate, the dev metric
  std::string sample_metric{};  // what Sample::score is: "sentence BLEU", "exact"
  std::vector<Sample> samples{};
  std::vector<AttentionExample> attention{};
  std::vector<AttentionSnapshot> snapshots{};  // in step order, all of one sentence
};

// The data the page inlines, as JSON (the format is described in docs/run-page.md). Attention
// weights are written in thousandths, as whole numbers (0.1234 -> 123), which keeps a run's
// page small and is finer than a colour can show.
std::string run_page_json(const RunPage& page);

// The whole page: the template with run_page_json(page) inlined.
std::string run_page_html(const RunPage& page);

// Writes run_page_html(page) to path atomically (a temporary file, then a rename), creating
// missing parent folders. Throws std::runtime_error naming the path when it cannot.
void write_run_page(const RunPage& page, const std::string& path);

}  // namespace gf::viz
