// Aligned text tables for human output.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "style.hpp"

namespace sluice::cli {

// Not thread-safe. Rows of cells printed as columns two spaces apart, under a header row.
// Cells may carry colour; widths count what the terminal shows.
class Table {
 public:
  explicit Table(std::vector<std::string> headers);

  // Numbers read better right-aligned.
  void align_right(std::size_t column);
  // Throws std::invalid_argument if the row's width differs from the header's.
  void add_row(std::vector<std::string> cells);
  bool empty() const { return rows_.empty(); }

  // Prints the header (bold when `style` is enabled) and the rows, no trailing spaces.
  void print(std::ostream& out, const Style& style) const;

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_aligned_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace sluice::cli
