// Test-only crash points at commit boundaries. They compile to nothing unless SLUICE_TEST_HOOKS is
// defined, which only the test build of the library does. With SLUICE_CRASH_AT=name[:n] in the
// environment, the n-th (default first) pass through point `name` calls abort().
#pragma once

namespace sluice::testing {

#ifdef SLUICE_TEST_HOOKS
void crash_point(const char* name);
#define SLUICE_CRASH_POINT(name) ::sluice::testing::crash_point(name)
#else
#define SLUICE_CRASH_POINT(name) ((void)0)
#endif

}  // namespace sluice::testing
