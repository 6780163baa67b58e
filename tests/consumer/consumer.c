/* The C ABI from C: a rejected argument is a status code and a message. */
#include <fa_jit/fa_jit.h>

#include <stdio.h>
#include <string.h>

int main(void) {
    fa_jit_attention_args args;
    memset(&args, 0, sizeof args);
    args.head_dim = 999;
    fa_jit_status status = fa_jit_attention(&args, NULL);
    printf("fa_jit %s: status %d: %s\n", fa_jit_version(), (int)status, fa_jit_last_error());
    return status == FA_JIT_ERROR_INVALID_ARGUMENT && strstr(fa_jit_last_error(), "head_dim") ? 0 : 1;
}
