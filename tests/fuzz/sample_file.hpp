// A small sluice file with something in every table the tools read, for the targets that fuzz
// the tools' reading of a file.
#pragma once

#include <string>

namespace sluice::fuzz {

// Writes a new sluice file at `path`: consumer "billing" on "orders" (one event delivered, one
// dead-lettered with "card declined"), consumer "mail" on "orders" with both events pending.
void write_sample_file(const std::string& path);

}  // namespace sluice::fuzz
