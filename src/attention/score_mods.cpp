// ScoreMods: the score modifiers a kernel is compiled with, and their spelling for tools and logs.
#include <string>

#include "attention/family.hpp"
#include "fa_jit/tuning.hpp"

namespace fa_jit {

std::string ScoreMods::to_string() const {
    std::string s;
    for (const auto& [on, name] : {std::pair{window, "window"}, {softcap, "softcap"}, {alibi, "alibi"}})
        if (on) s += (s.empty() ? "" : ",") + std::string(name);
    return s.empty() ? "none" : s;
}

ScoreMods ScoreMods::parse(std::string_view text, const char* argument) {
    ScoreMods m;
    if (text.empty() || text == "none") return m;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = text.find(',', start);
        const std::string_view name = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
        if (name == "window")
            m.window = true;
        else if (name == "softcap")
            m.softcap = true;
        else if (name == "alibi")
            m.alibi = true;
        else
            throw InvalidArgument(argument, "window, softcap, alibi (comma-separated) or none", std::string(text));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return m;
}

std::string mods_argument(const AttentionKernelSpec& spec) {
    if (spec.paged) return ", " + std::to_string(spec.mods.bits()) + (spec.varlen ? ", true, true" : ", false, true");
    if (spec.varlen) return ", " + std::to_string(spec.mods.bits()) + ", true";
    return spec.mods.any() ? ", " + std::to_string(spec.mods.bits()) : "";
}

}  // namespace fa_jit
