// This process's memory as the kernel counts it (/proc/self/status).
#pragma once

namespace bench {

struct ProcessMemory {
  // Resident set size now (VmRSS) and its high-water mark (VmHWM), in MiB.
  double rss_mib = 0;
  double peak_rss_mib = 0;
};

ProcessMemory read_process_memory();

}  // namespace bench
