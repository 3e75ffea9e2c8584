// What the library allocates for the caller: every buffer comes from malloc, in one block.
#include <cstdlib>

#include "sluice/sluice.h"

extern "C" {

void sluice_free(void* p) { std::free(p); }

}  // extern "C"
