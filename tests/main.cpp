// The test binary's entry point (Catch2 v2 provides main with this macro).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
