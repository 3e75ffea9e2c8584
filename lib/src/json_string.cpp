#include "json_string.hpp"

namespace sluice {

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte == '"' || byte == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20) {
      out += "\\u00";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
}

std::string json_id_array(const std::vector<std::int64_t>& ids) {
  std::string array(1, '[');
  for (const std::int64_t id : ids) {
    if (array.size() > 1) array += ',';
    array += std::to_string(id);
  }
  array += ']';
  return array;
}

}  // namespace sluice
