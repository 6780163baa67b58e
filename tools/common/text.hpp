// Small parsing and formatting helpers shared by the tools.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fa_jit::tools {

// "123", "64K", "500M", "2G", "1T" (binary multiples; "KB", "KiB" ... accepted). nullopt when malformed or too big.
std::optional<std::uint64_t> parse_byte_size(std::string_view text);
// 1536 -> "1.5 KiB"; below 1 KiB: "512 B".
std::string human_bytes(std::uint64_t bytes);

// "a,b,,c" -> {"a", "b", "c"} (blanks around items trimmed, empty items dropped).
std::vector<std::string> split_list(std::string_view text, char separator = ',');

// True when `fd` is a terminal: progress lines are redrawn in place only there.
bool is_terminal(int fd) noexcept;

}  // namespace fa_jit::tools
