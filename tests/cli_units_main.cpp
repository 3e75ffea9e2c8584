// doctest's main for the CLI's unit tests (the pieces of cli/ that need no database).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
