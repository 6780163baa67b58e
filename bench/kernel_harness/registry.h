#pragma once
#include <vector>
struct HarnessKernel {
    const char* name;
    const void* fn;
    int block_m, threads, smem;
};
std::vector<HarnessKernel>& harness_registry();
