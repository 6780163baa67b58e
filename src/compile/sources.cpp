// Kernel sources: the copies embedded at build time, or files in $FA_JIT_KERNEL_DIR (kernel development without
// rebuilding). A source comes with every header it includes, found by following #include "..." lines.
#include "compile/embedded_sources.hpp"
#include "fa_jit/jit.hpp"

#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

namespace fa_jit {
namespace {

std::optional<std::string> read_file(const std::string& dir, const std::string& name) {
    std::ifstream in(dir + "/" + name, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::optional<std::string> find_text(const std::string& name) {
    if (const char* dir = std::getenv("FA_JIT_KERNEL_DIR"); dir && *dir) return read_file(dir, name);
    for (const detail::EmbeddedFile& f : detail::embedded_kernel_files())
        if (f.name == name) return std::string(f.text);
    return std::nullopt;
}

// The names in `#include "name"` lines (angle-bracket includes are not ours and are left to NVRTC).
std::vector<std::string> quoted_includes(const std::string& text) {
    std::vector<std::string> names;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        std::size_t i = line.find_first_not_of(" \t");
        if (i == std::string::npos || line[i] != '#') continue;
        i = line.find_first_not_of(" \t", i + 1);
        if (i == std::string::npos || line.compare(i, 7, "include") != 0) continue;
        const std::size_t open = line.find('"', i + 7);
        const std::size_t close = open == std::string::npos ? open : line.find('"', open + 1);
        if (close != std::string::npos) names.push_back(line.substr(open + 1, close - open - 1));
    }
    return names;
}

}  // namespace

Source kernel_source(std::string_view file_name) {
    const std::string name(file_name);
    std::optional<std::string> text = find_text(name);
    if (!text) {
        const char* dir = std::getenv("FA_JIT_KERNEL_DIR");
        throw InvalidArgument("kernel source", std::string("a file of ") + (dir && *dir ? dir : "kernel_sources/"),
                              name);
    }
    Source source{name, std::move(*text), {}};
    // Breadth-first over includes; each header once, in a deterministic order (it feeds the cache key).
    std::set<std::string> seen{name};
    std::vector<std::string> pending = quoted_includes(source.text);
    while (!pending.empty()) {
        std::string header = std::move(pending.front());
        pending.erase(pending.begin());
        if (!seen.insert(header).second) continue;
        std::optional<std::string> header_text = find_text(header);
        if (!header_text) throw InvalidArgument("#include in " + name, "a header of kernel_sources/", header);
        for (std::string& nested : quoted_includes(*header_text)) pending.push_back(std::move(nested));
        source.headers.push_back({header, std::move(*header_text)});
    }
    return source;
}

std::vector<std::string> kernel_source_names() {
    std::vector<std::string> names;
    for (const detail::EmbeddedFile& f : detail::embedded_kernel_files())
        if (f.name.size() > 3 && f.name.substr(f.name.size() - 3) == ".cu") names.emplace_back(f.name);
    return names;
}

}  // namespace fa_jit
