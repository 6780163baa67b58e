#include "common/text.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>

namespace fa_jit::tools {

std::optional<std::uint64_t> parse_byte_size(std::string_view s) {
    std::uint64_t value = 0;
    std::size_t i = 0;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
        const unsigned digit = static_cast<unsigned>(s[i] - '0');
        if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
        value = value * 10 + digit;
    }
    if (i == 0) return std::nullopt;
    std::string_view suffix = s.substr(i);
    int shift = 0;
    if (!suffix.empty()) {
        switch (std::toupper(static_cast<unsigned char>(suffix[0]))) {
            case 'K': shift = 10; break;
            case 'M': shift = 20; break;
            case 'G': shift = 30; break;
            case 'T': shift = 40; break;
            default: break;
        }
        if (shift) suffix.remove_prefix(1);
        if (shift && (suffix == "i" || suffix == "iB")) suffix = {};
        if (suffix == "B" || suffix == "b") suffix = {};
    }
    if (!suffix.empty()) return std::nullopt;
    if (shift && value > (UINT64_MAX >> shift)) return std::nullopt;
    return value << shift;
}

std::string human_bytes(std::uint64_t bytes) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    if (bytes < 1024) return fmt::format("{} B", bytes);
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        ++u;
    }
    return fmt::format("{:.1f} {}", v, units[u]);
}

std::vector<std::string> split_list(std::string_view text, char separator) {
    std::vector<std::string> items;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(separator, start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view item = text.substr(start, end - start);
        while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.remove_prefix(1);
        while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.remove_suffix(1);
        if (!item.empty()) items.emplace_back(item);
        start = end + 1;
    }
    return items;
}

bool is_terminal(int fd) noexcept { return ::isatty(fd) == 1; }

}  // namespace fa_jit::tools
