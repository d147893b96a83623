// Flags that fill a training::RunConfig: a setting left empty ("not given") without its flag,
// and a kind given by name (--schedule cosine).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gf::cli {

// A flag whose value goes into a setting that stays empty without it.
template <typename T>
CLI::Option* add_setting(CLI::App& app, const std::string& name, std::optional<T>& setting,
                         const std::string& help) {
  return app.add_option_function<T>(
      name, [&setting](const T& value) { setting = value; }, help);
}

// A flag naming a kind, refused with the names it takes ("--task: cpy not in {copy,...}").
template <typename Kind>
CLI::Option* add_kind(CLI::App& app, const std::string& name, std::optional<Kind>& setting,
                      std::optional<Kind> (*named)(std::string_view),
                      const std::vector<std::string>& names, const std::string& help) {
  return app
      .add_option_function<std::string>(
          name, [&setting, named](const std::string& value) { setting = named(value); }, help)
      ->check(CLI::IsMember(names));
}

}  // namespace gf::cli
