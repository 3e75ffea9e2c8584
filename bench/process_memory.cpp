#include "process_memory.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace bench {

ProcessMemory read_process_memory() {
  ProcessMemory memory;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    std::istringstream fields(line);
    std::string name;
    double kib = 0;
    fields >> name >> kib;
    if (name == "VmRSS:") memory.rss_mib = kib / 1024;
    if (name == "VmHWM:") memory.peak_rss_mib = kib / 1024;
  }
  return memory;
}

}  // namespace bench
