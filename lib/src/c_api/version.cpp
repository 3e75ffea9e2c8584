// The library's version, for an app to compare with the header it was compiled with.
#include "sluice/sluice.h"

extern "C" {

int sluice_libversion_number(void) { return SLUICE_VERSION_NUMBER; }

const char* sluice_libversion(void) { return SLUICE_VERSION; }

}  // extern "C"
