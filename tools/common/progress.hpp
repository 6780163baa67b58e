// A progress report on stderr for long work. On a terminal one line is redrawn in place ("\r[12/40] ..."); in a
// log (CI) each finished item gets one short line, so logs stay small. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdio>
#include <mutex>
#include <string>

namespace fa_jit::tools {

class Progress {
public:
    // `enabled` false: silent (e.g. --quiet).
    Progress(std::size_t total, bool enabled);
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;
    ~Progress() { finish(); }

    // Reports one more item done, described by `text` (e.g. "compiled sm_80 fp32 d64 64x64w4 (0.41 s)").
    void item_done(const std::string& text);
    // Prints a whole line to `to` (stdout or stderr) without tearing the progress line (it is redrawn after).
    void message(const std::string& line, std::FILE* to = stderr);
    // Ends the in-place line (idempotent). Call before printing the summary.
    void finish();

private:
    void draw_locked();

    std::mutex mutex_;
    std::size_t total_, done_ = 0;
    bool enabled_, terminal_, line_open_ = false;
    std::string last_;
};

}  // namespace fa_jit::tools
