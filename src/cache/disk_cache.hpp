// DiskCache for the library: the public class (fa_jit/cache.hpp) with its key type complete.
#pragma once

#include "cache/cache_key.hpp"
#include "fa_jit/cache.hpp"
