// Small parsing and formatting helpers shared by the tools.
#include "common/text.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace fa_jit::tools {

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

std::vector<int> parse_lengths(std::string_view text) {
    std::vector<int> out;
    for (const std::string& item : split_list(text)) {
        std::size_t used = 0;
        long long v = 0;
        try {
            v = std::stoll(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used + 1 == item.size() && (item.back() == 'k' || item.back() == 'K')) {
            v *= 1024;
            used = item.size();
        }
        if (used != item.size() || v <= 0 || v > (1 << 30)) throw std::invalid_argument(item);
        out.push_back(static_cast<int>(v));
    }
    return out;
}

bool is_terminal(int fd) noexcept { return ::isatty(fd) == 1; }

}  // namespace fa_jit::tools
