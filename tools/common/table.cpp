#include "common/table.hpp"

#include <algorithm>

namespace fa_jit::tools {

std::string Table::text() const {
    std::vector<std::size_t> width(columns_.size());
    for (std::size_t c = 0; c < columns_.size(); ++c) {
        width[c] = columns_[c].title.size();
        for (const auto& row : rows_)
            if (c < row.size()) width[c] = std::max(width[c], row[c].size());
    }
    const auto line = [&](const auto& cell_at) {
        std::string out;
        for (std::size_t c = 0; c < columns_.size(); ++c) {
            const std::string& cell = cell_at(c);
            const std::string pad(width[c] - std::min(width[c], cell.size()), ' ');
            const bool last = c + 1 == columns_.size();
            if (columns_[c].align == Align::right)
                out += pad + cell;
            else
                out += last ? cell : cell + pad;  // no trailing blanks after the last column
            if (!last) out += "  ";
        }
        return out + "\n";
    };
    static const std::string none;
    std::string out = line([&](std::size_t c) -> const std::string& { return columns_[c].title; });
    std::string rule;
    for (std::size_t c = 0; c < columns_.size(); ++c) rule += std::string(width[c], '-') + (c + 1 < columns_.size() ? "  " : "");
    out += rule + "\n";
    for (const auto& row : rows_)
        out += line([&](std::size_t c) -> const std::string& { return c < row.size() ? row[c] : none; });
    return out;
}

std::string csv_cell(const std::string& cell) {
    if (cell.find_first_of(",\"\n\r") == std::string::npos) return cell;
    std::string quoted = "\"";
    for (char ch : cell) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return quoted + "\"";
}

std::string Table::csv_line(const std::vector<std::string>& cells) const {
    std::string out;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
        if (c) out += ',';
        if (c < cells.size()) out += csv_cell(cells[c]);
    }
    return out + "\n";
}

std::string Table::csv_header() const {
    std::vector<std::string> titles;
    for (const auto& col : columns_) titles.push_back(col.title);
    return csv_line(titles);
}

std::string Table::csv() const {
    std::string out = csv_header();
    for (const auto& row : rows_) out += csv_line(row);
    return out;
}

}  // namespace fa_jit::tools
