#include "table.hpp"

#include <stdexcept>

namespace sluice::cli {

Table::Table(std::vector<std::string> headers)
    : headers_(std::move(headers)), right_aligned_(headers_.size(), false) {}

void Table::align_right(std::size_t column) { right_aligned_.at(column) = true; }

void Table::add_row(std::vector<std::string> cells) {
  if (cells.size() != headers_.size()) {
    throw std::invalid_argument("table row has " + std::to_string(cells.size()) +
                                " cells, header has " + std::to_string(headers_.size()));
  }
  rows_.push_back(std::move(cells));
}

void Table::print(std::ostream& out, const Style& style) const {
  std::vector<std::size_t> widths(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) widths[c] = display_width(headers_[c]);
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      widths[c] = std::max(widths[c], display_width(row[c]));
    }
  }
  const auto print_row = [&](const std::vector<std::string>& cells, bool header) {
    std::string line;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string padding(widths[c] - display_width(cells[c]), ' ');
      const std::string text = header ? style.bold(cells[c]) : cells[c];
      const bool last = c + 1 == cells.size();
      if (c > 0) line += "  ";
      if (right_aligned_[c]) {
        line += padding + text;
      } else {
        line += text;
        if (!last) line += padding;
      }
    }
    // An empty last cell would otherwise leave the separator and padding dangling.
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  };
  print_row(headers_, true);
  for (const auto& row : rows_) print_row(row, false);
}

}  // namespace sluice::cli
