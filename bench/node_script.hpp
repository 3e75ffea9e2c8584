// Runs a Node.js script as a child process and hands back what it printed: how the side-by-side
// bench (peers_main.cpp) runs the peers that live in npm packages.
#pragma once

#include <string>
#include <vector>

namespace bench {

// Runs `node script args...` (`node` looked up in PATH unless it holds a slash), waits for it and
// returns its standard output. Its standard error goes to this process's. Throws
// std::runtime_error naming the script and its exit status if it cannot start or exits other
// than 0. Thread-safe.
std::string run_node_script(const std::string& node, const std::string& script,
                            const std::vector<std::string>& args);

}  // namespace bench
