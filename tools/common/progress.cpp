#include "common/progress.hpp"

#include "common/text.hpp"

#include <cstdio>
#include <unistd.h>

namespace fa_jit::tools {

Progress::Progress(std::size_t total, bool enabled)
    : total_(total), enabled_(enabled), terminal_(is_terminal(STDERR_FILENO)) {}

void Progress::draw_locked() {
    // "\x1b[K" clears what a longer previous line left behind.
    std::fprintf(stderr, "\r[%zu/%zu] %s\x1b[K", done_, total_, last_.c_str());
    std::fflush(stderr);
    line_open_ = true;
}

void Progress::item_done(const std::string& text) {
    std::lock_guard lock(mutex_);
    ++done_;
    if (!enabled_) return;
    last_ = text;
    if (terminal_)
        draw_locked();
    else
        std::fprintf(stderr, "[%zu/%zu] %s\n", done_, total_, text.c_str());
}

void Progress::message(const std::string& line, std::FILE* to) {
    std::lock_guard lock(mutex_);
    if (line_open_) std::fprintf(stderr, "\r\x1b[K");
    std::fprintf(to, "%s\n", line.c_str());
    std::fflush(to);
    if (line_open_) draw_locked();
}

void Progress::finish() {
    std::lock_guard lock(mutex_);
    if (line_open_) std::fprintf(stderr, "\n");
    line_open_ = false;
}

}  // namespace fa_jit::tools
