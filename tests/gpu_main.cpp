// GPU tests: exit with 77 (ctest's SKIP_RETURN_CODE) when there is no GPU, so they are reported skipped, never passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "fa_jit/jit.hpp"

#include <cstdio>

int main(int argc, char** argv) {
    if (fa_jit::device_count() == 0) {
        std::fprintf(stderr, "no CUDA device (or no driver): skipping GPU tests\n");
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
