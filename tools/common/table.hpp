// A plain-text table for humans and the same rows as CSV for machines.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace fa_jit::tools {

class Table {
public:
    enum class Align { left, right };
    struct Column {
        std::string title;
        Align align = Align::left;
    };

    explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

    // A row has one cell per column (missing cells print empty).
    void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
    bool empty() const noexcept { return rows_.empty(); }

    // Columns padded to their widest cell, two spaces apart, a rule under the titles.
    std::string text() const;
    // RFC 4180: a header line, then one line per row; cells with commas, quotes or newlines are quoted.
    std::string csv() const;
    // The header line alone, and one row's line (cells as add_row takes them): for output that streams its rows.
    std::string csv_header() const;
    std::string csv_line(const std::vector<std::string>& cells) const;

private:
    std::vector<Column> columns_;
    std::vector<std::vector<std::string>> rows_;
};

std::string csv_cell(const std::string& cell);

}  // namespace fa_jit::tools
