#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

#include "viz/run_page.h"

using namespace gf::viz;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// One sentence pair: 2 source tokens, 2 target positions; one layer of one head each.
AttentionMaps small_maps() {
  AttentionMaps maps;
  maps.source_tokens = {"▁Die", "注意力"};
  maps.target_read = {"<s>", "</script>"};
  maps.target_next = {"</script>", "</s>"};
  maps.encoder = {{{0.25f, 0.75f, 0.1234f, 0.8766f}}};
  maps.decoder = {{{1.0f, 0.0f, 0.4996f, 0.5004f}}};
  maps.cross = {{{0.0004f, 0.9996f, 1.2f, -0.1f}}};  // out of [0, 1]: clamped
  return maps;
}

RunPage small_page() {
  RunPage page;
  page.title = "runs/copy.safetensors";
  page.subtitle = "copy task, 600 steps";
  page.configuration = {{"d_model", "64"}};
  page.data = {{"training pairs", "9,000"}};
  page.data_examples = {{"¿Qué?", "What?"}};
  page.timings = {{"training", "12.3 s"}};
  page.curves = {Curve{.title = "loss",
                       .y_label = "cross-entropy",
                       .log_y = true,
                       .series = {{.name = "train",
                                   .xs = {1, 2, 3, 4},
                                   .ys = {2.5, std::numeric_limits<double>::quiet_NaN(),
                                          std::numeric_limits<double>::infinity(), 0.125}}}}};
  page.sample_metric = "exact";
  page.samples = {{.source = "a b", .reference = "a b", .output = "a b", .score = 1.0}};
  page.attention = {{.label = "dev pair 1", .maps = small_maps()}};
  page.snapshots = {{.step = 0, .maps = small_maps()}, {.step = 100, .maps = small_maps()}};
  return page;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("run page JSON: the documented shape and values", "[viz][run_page]") {
  const json data = json::parse(run_page_json(small_page()));
  CHECK(data["format"] == "gradformer-run-page/1");
  CHECK(data["title"] == "runs/copy.safetensors");
  CHECK(data["subtitle"] == "copy task, 600 steps");
  CHECK(data["configuration"] == json::parse(R"([["d_model", "64"]])"));
  CHECK(data["data"] == json::parse(R"([["training pairs", "9,000"]])"));
  CHECK(data["data_examples"][0][0] == "¿Qué?");
  CHECK(data["timings"][0][1] == "12.3 s");
  CHECK(data["sample_metric"] == "exact");
  CHECK(data["samples"][0] == json::parse(
                                  R"({"source": "a b", "reference": "a b", "output": "a b",
                                       "score": 1})"));
  REQUIRE(data["snapshots"].size() == 2);
  CHECK(data["snapshots"][1]["step"] == 100);
  CHECK(data["snapshots"][1]["cross"] == data["attention"][0]["cross"]);
}

TEST_CASE("run page JSON: curves keep whole numbers short and write gaps as null",
          "[viz][run_page]") {
  const std::string text = run_page_json(small_page());
  CHECK_THAT(text, Contains(R"("x":[1,2,3,4],"y":[2.5,null,null,0.125])"));
  const json curve = json::parse(text)["curves"][0];
  CHECK(curve["title"] == "loss");
  CHECK(curve["x_label"] == "step");
  CHECK(curve["y_label"] == "cross-entropy");
  CHECK(curve["log_y"] == true);
  CHECK(curve["series"][0]["name"] == "train");
}

TEST_CASE("run page JSON: attention weights in whole thousandths, clamped to 0..1000",
          "[viz][run_page]") {
  const json example = json::parse(run_page_json(small_page()))["attention"][0];
  CHECK(example["label"] == "dev pair 1");
  CHECK(example["source_tokens"] == json::array({"▁Die", "注意力"}));
  CHECK(example["target_read"] == json::array({"<s>", "</script>"}));
  CHECK(example["target_next"] == json::array({"</script>", "</s>"}));
  CHECK(example["encoder"] == json::parse("[[[250, 750, 123, 877]]]"));
  CHECK(example["decoder"] == json::parse("[[[1000, 0, 500, 500]]]"));
  CHECK(example["cross"] == json::parse("[[[0, 1000, 1000, 0]]]"));
}

TEST_CASE("run page JSON: no '<' at all, so that a token cannot end the page's script",
          "[viz][run_page]") {
  const std::string text = run_page_json(small_page());
  CHECK(text.find('<') == std::string::npos);
  CHECK_THAT(text, Contains(R"(\u003c/script>)"));
  CHECK(json::parse(text)["attention"][0]["target_next"][0] == "</script>");  // the same JSON
}

TEST_CASE("run page JSON: a token that is not UTF-8 shows as U+FFFD instead of failing",
          "[viz][run_page]") {
  RunPage page = small_page();
  page.attention[0].maps.source_tokens[1] = "\xe6\xb3";  // the first two bytes of 注
  const json example = json::parse(run_page_json(page))["attention"][0];
  CHECK(example["source_tokens"][1] == "\xef\xbf\xbd");
}

TEST_CASE("run page JSON: a matrix of the wrong size names the example, kind, layer and head",
          "[viz][run_page]") {
  RunPage page = small_page();
  page.attention[0].maps.cross[0][0].pop_back();
  CHECK_THROWS_WITH(run_page_json(page),
                    Contains("attention example 0 ('dev pair 1'), cross layer 0 head 0") &&
                        Contains("3 weights, expected 2 x 2 = 4"));

  page = small_page();
  page.snapshots[1].maps.decoder[0].push_back({0.5f});
  CHECK_THROWS_WITH(run_page_json(page),
                    Contains("attention snapshot at step 100, decoder layer 0 head 1") &&
                        Contains("1 weights, expected 2 x 2 = 4"));

  page = small_page();
  page.attention[0].maps.source_tokens.push_back("x");  // the encoder's 4 weights: not 3 x 3
  CHECK_THROWS_AS(run_page_json(page), std::invalid_argument);

  page = small_page();
  page.attention[0].maps.target_read.pop_back();
  CHECK_THROWS_WITH(run_page_json(page), Contains("1 tokens read by the decoder but 2 predicted"));
}

TEST_CASE("run page JSON: a series whose xs and ys differ in length is refused",
          "[viz][run_page]") {
  RunPage page = small_page();
  page.curves[0].series[0].ys.pop_back();
  CHECK_THROWS_WITH(run_page_json(page),
                    Contains("curve 'loss', series 'train': 4 x values but 3 y values"));
}

TEST_CASE("run page JSON: an empty page is valid, with empty lists", "[viz][run_page]") {
  const json data = json::parse(run_page_json(RunPage{}));
  for (const char* key : {"configuration", "data", "data_examples", "timings", "curves", "samples",
                          "attention", "snapshots"}) {
    INFO(key);
    CHECK(data[key] == json::array());
  }
}

TEST_CASE("run page HTML: one file with the data inlined, nothing to load from elsewhere",
          "[viz][run_page]") {
  const std::string html = run_page_html(small_page());
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK_THAT(html, Contains(R"(<meta charset="utf-8">)"));
  CHECK_THAT(html, Contains("<title>runs/copy.safetensors</title>"));
  CHECK_THAT(html, Contains(R"(<script type="application/json" id="run-data">)" +
                            run_page_json(small_page()) + "</script>"));
  CHECK_THAT(html, Contains("注意力"));
  CHECK_THAT(html, Contains("WenQuanYi Micro Hei"));  // a CJK font in the list
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("@@") == std::string::npos);  // every marker filled
  // The data's "</script>" tokens are escaped: the only closing tags are the two scripts'.
  size_t closing = 0;
  for (size_t at = html.find("</script>"); at != std::string::npos;
       at = html.find("</script>", at + 1))
    ++closing;
  CHECK(closing == 2);
}

TEST_CASE("run page HTML: the title is escaped, and markers in the data stay data",
          "[viz][run_page]") {
  RunPage page = small_page();
  page.title = "a <b> & \"c\"";
  page.subtitle = "@@SCRIPT@@ @@STYLE@@";
  const std::string html = run_page_html(page);
  CHECK_THAT(html, Contains("<title>a &lt;b&gt; &amp; &quot;c&quot;</title>"));
  CHECK_THAT(html, Contains(R"("subtitle":"@@SCRIPT@@ @@STYLE@@")"));
}

TEST_CASE("write_run_page writes the page, creating folders, and names the path it cannot write",
          "[viz][run_page]") {
  const auto folder = std::filesystem::temp_directory_path() / "gradformer_test_run_page";
  std::filesystem::remove_all(folder);
  const auto path = folder / "nested" / "run.html";
  write_run_page(small_page(), path.string());
  CHECK(read_file(path) == run_page_html(small_page()));
  CHECK_FALSE(std::filesystem::exists(path.string() + ".tmp"));

  const auto blocked = folder / "nested" / "run.html" / "inside-a-file.html";
  CHECK_THROWS_WITH(write_run_page(small_page(), blocked.string()),
                    Contains("cannot write " + blocked.string()));
  std::filesystem::remove_all(folder);
}
