// Small parsing and formatting helpers shared by the tools. (Byte sizes are parsed by fa_jit::cache::parse_byte_size,
// the library's own reading of FA_JIT_CACHE_MAX_BYTES, so that the tools and the library accept the same text.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fa_jit::tools {

// 1536 -> "1.5 KiB"; below 1 KiB: "512 B".
std::string human_bytes(std::uint64_t bytes);

// "a,b,,c" -> {"a", "b", "c"} (blanks around items trimmed, empty items dropped).
std::vector<std::string> split_list(std::string_view text, char separator = ',');

// "512,1k,16k" -> {512, 1024, 16384}: positive integers up to 2^30, each with an optional k (x 1024), as the papers'
// plots name sequence lengths. Throws std::invalid_argument whose what() is the first item that is not one; an empty
// list gives an empty vector (each tool words its own usage error).
std::vector<int> parse_lengths(std::string_view text);

// True when `fd` is a terminal: progress lines are redrawn in place only there.
bool is_terminal(int fd) noexcept;

}  // namespace fa_jit::tools
