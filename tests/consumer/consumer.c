/* The C ABI from C: a rejected argument is a status code and a message. */
#include <fa_jit/fa_jit.h>
#include <stdio.h>
#include <string.h>

/* 0 if the last call failed with an invalid argument naming `argument`. */
static int rejected(fa_jit_status status, const char* argument) {
    printf("fa_jit %s: status %d: %s\n", fa_jit_version(), (int)status, fa_jit_last_error());
    return status == FA_JIT_ERROR_INVALID_ARGUMENT && strstr(fa_jit_last_error(), argument) ? 0 : 1;
}

int main(void) {
    fa_jit_attention_args args;
    uint64_t bytes = 0;
    int failures = 0;

    /* Initialized, then filled: validation names the bad field before anything reaches a GPU. */
    fa_jit_attention_args_init(&args);
    args.head_dim = 999;
    failures += rejected(fa_jit_attention(&args, NULL), "'head_dim'");
    failures += rejected(fa_jit_attention_workspace_size(NULL, &bytes), "'args'");
    failures += rejected(fa_jit_attention_choice(&args, NULL, NULL, 0, NULL, NULL), "'head_dim'");

    /* A struct set to zero with memset has struct_size 0: not initialized, and rejected as such. */
    memset(&args, 0, sizeof args);
    args.head_dim = 999;
    failures += rejected(fa_jit_attention(&args, NULL), "'args.struct_size'");
    return failures == 0 ? 0 : 1;
}
