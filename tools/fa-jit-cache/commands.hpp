// The subcommands of fa-jit-cache. Each add_*() registers one subcommand with its options and returns it with the
// function that runs it (called after parsing, when that subcommand was given).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <stdexcept>
#include <string>

namespace fa_jit::tools {

struct Command {
    CLI::App* app;             // the subcommand, owned by the parent app
    std::function<int()> run;  // returns the exit code
};

Command add_info(CLI::App& app);
Command add_list(CLI::App& app);
Command add_verify(CLI::App& app);
Command add_prune(CLI::App& app);
Command add_clear(CLI::App& app);
Command add_warmup(CLI::App& app);

// A mistake in how the tool was called (bad option value): exit code 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Exit codes shared by all subcommands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // the work found or hit problems (bad entries, failed compiles)
inline constexpr int kExitUsage = 2;   // bad arguments, or nothing sensible can be done (unusable cache)

// The environment variables every subcommand obeys, for --help.
extern const char* const kEnvironmentHelp;

// Sets the subcommand's --help footer: `details` (pre-wrapped lines), then the environment variables.
void set_help_details(CLI::App* sub, const std::string& details);

}  // namespace fa_jit::tools
