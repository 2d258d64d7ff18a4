// JSON string escaping for the command-line program's --json outputs.
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace tb::cli {

inline std::string json_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace tb::cli
