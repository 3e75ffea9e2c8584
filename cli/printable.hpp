// What human output may show of text from the file or the command line: every control
// character escaped, so a name, header, error or note cannot drive the operator's terminal
// (set its title, clear the screen, hide text). --json output stays exact instead.
#pragma once

#include <string>
#include <string_view>

namespace sluice::cli {

// `text` with each control character written out: a C0 control, DEL or a byte 0x80 to 0x9F
// that is not UTF-8 as \xHH ("\x1b"), a C1 control in UTF-8 as \uHHHH ("\u009b"). All else,
// valid or not, is kept.
std::string printable(std::string_view text);

}  // namespace sluice::cli
