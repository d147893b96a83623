// The whole of a text as a number, or false: what std::from_chars accepts (no leading spaces,
// no '+', nothing after the number), for every arithmetic type. Some standard libraries lack
// from_chars for floating point (libc++ before version 17, which Emscripten 3.1 ships for the
// WebAssembly build); there strtof/strtod stand in, with the same checks around them.
#pragma once

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <version>

namespace gf {

template <typename Number>
requires std::is_arithmetic_v<Number>
bool parse_number(std::string_view text, Number& out) {
#if !defined(__cpp_lib_to_chars)
  if constexpr (std::is_floating_point_v<Number>) {
    // from_chars reads no '+', no leading space and, in its general format, no hex float
    if (text.empty() || text.front() == '+' ||
        std::isspace(static_cast<unsigned char>(text.front())) ||
        text.find_first_of("xX") != std::string_view::npos)
      return false;
    const std::string terminated(text);  // strtod reads up to a '\0'
    char* stop = nullptr;
    errno = 0;
    Number value{};
    if constexpr (std::is_same_v<Number, float>)
      value = std::strtof(terminated.c_str(), &stop);
    else
      value = static_cast<Number>(std::strtod(terminated.c_str(), &stop));
    if (errno == ERANGE || stop != terminated.c_str() + terminated.size()) return false;
    out = value;
    return true;
  } else
#endif
  {
    const char* end = text.data() + text.size();
    const auto [stop, err] = std::from_chars(text.data(), end, out);
    return err == std::errc{} && stop == end;
  }
}

}  // namespace gf
