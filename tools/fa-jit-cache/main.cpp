// fa-jit-cache: warm, inspect and maintain fa_jit's on-disk kernel cache.
#include "commands.hpp"

#include "fa_jit/errors.hpp"

#include <cstdio>
#include <vector>

namespace fa_jit::tools {

const char* const kEnvironmentHelp =
    "Environment:\n"
    "  FA_JIT_CACHE_DIR        cache directory (default $XDG_CACHE_HOME/fa_jit, else ~/.cache/fa_jit)\n"
    "  FA_JIT_CACHE=0          disable the disk cache (warmup then refuses to run)\n"
    "  FA_JIT_CACHE_MAX_BYTES  size cap for LRU eviction, e.g. 2G (default 1 GiB)\n"
    "  FA_JIT_LOG              warn|info|debug: library diagnostics on stderr\n"
    "\n"
    "Exit codes: 0 success, 1 problems found or compiles failed, 2 usage error or unusable cache.";

void set_help_details(CLI::App* sub, const std::string& details) {
    sub->footer(details + "\n\n" + kEnvironmentHelp);
}

namespace {

int run(int argc, char** argv) {
    CLI::App app{
        "fa-jit-cache: warm, inspect and maintain fa_jit's on-disk kernel cache.\n"
        "fa_jit compiles FlashAttention kernels at run time with NVRTC and keeps the results on disk, one file per\n"
        "kernel. Deployers run `warmup` at image-build time (no GPU needed) so that production processes never\n"
        "wait for the compiler.",
        "fa-jit-cache"};
    app.footer(kEnvironmentHelp);
    app.require_subcommand(1, 1);

    const std::vector<Command> commands = {add_info(app),  add_list(app),  add_verify(app),
                                           add_prune(app), add_clear(app), add_warmup(app)};

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);  // prints help (exit 0) or the error and a hint to stderr
        return code == 0 ? kExitOk : kExitUsage;
    }
    for (const Command& c : commands)
        if (c.app->parsed()) return c.run();
    return kExitUsage;  // unreachable: require_subcommand
}

}  // namespace
}  // namespace fa_jit::tools

int main(int argc, char** argv) {
    using namespace fa_jit::tools;
    try {
        return run(argc, argv);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "fa-jit-cache: %s\n", e.what());
        return kExitUsage;
    } catch (const fa_jit::InvalidArgument& e) {
        std::fprintf(stderr, "fa-jit-cache: %s\n", e.what());
        return kExitUsage;
    } catch (const fa_jit::Error& e) {
        std::fprintf(stderr, "fa-jit-cache: %s\n", e.what());
        return kExitFailed;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fa-jit-cache: unexpected error: %s\n", e.what());
        return kExitFailed;
    }
}
