#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

#include "training/run_options.h"

using gf::training::NormPlacement;
using gf::training::PositionKind;
using gf::training::run_config_from_options;
using gf::training::Task;

TEST_CASE("options: the flags of transformer train as KEY=VALUE text", "[training][options]") {
  const auto c = run_config_from_options(
      "task=reverse&heads=1&d-model=32&norm=pre&positions=learned&tied=false&dropout=0.1&"
      "lr=0.5&seed=7&steps=300&eval-count=50&schedule=cosine&split=length");
  CHECK(c.task == Task::Reverse);
  CHECK(c.heads == 1);
  CHECK(c.d_model == 32);
  CHECK(c.norm == NormPlacement::PreNorm);
  CHECK(c.positions == PositionKind::Learned);
  CHECK(c.tied == false);
  CHECK(c.dropout == 0.1f);
  CHECK(c.lr == 0.5f);
  CHECK(c.seed == 7u);
  CHECK(c.steps == 300);
  CHECK(c.eval_count == 50);
  CHECK(c.schedule == gf::training::ScheduleKind::Cosine);
  CHECK(c.split == gf::data::ToySplit::Length);
  // what is not given stays not given, for settle() to fill in
  CHECK_FALSE(c.layers.has_value());
  CHECK_FALSE(c.warmup.has_value());
}

TEST_CASE("options: empty parts are skipped, and nothing is nothing", "[training][options]") {
  CHECK(run_config_from_options("&heads=2&&").heads == 2);
  CHECK_FALSE(run_config_from_options("").task.has_value());
}

TEST_CASE("options: a bad key, value or pair is refused, named", "[training][options]") {
  CHECK_THROWS_WITH(run_config_from_options("hedas=2"),
                    Catch::Contains("no setting \"hedas\"") && Catch::Contains("heads"));
  CHECK_THROWS_WITH(run_config_from_options("heads=two"),
                    Catch::Contains("\"two\" is not a value of heads"));
  CHECK_THROWS_WITH(run_config_from_options("heads=2x"), Catch::Contains("\"2x\""));
  CHECK_THROWS_WITH(run_config_from_options("dropout=+0.1"), Catch::Contains("\"+0.1\""));
  CHECK_THROWS_WITH(run_config_from_options("norm=middle"), Catch::Contains("of norm"));
  CHECK_THROWS_WITH(run_config_from_options("task=copy&autostart"),
                    Catch::Contains("\"autostart\" is not KEY=VALUE"));
  CHECK_THROWS_AS(run_config_from_options("task=translate2"), std::invalid_argument);
}

TEST_CASE("options: every key the header names is read", "[training][options]") {
  CHECK(gf::training::run_option_keys().size() == 27);
  for (const std::string& key : gf::training::run_option_keys())
    CHECK_THROWS_WITH(run_config_from_options(key + "=\x01"), Catch::Contains("of " + key));
}
