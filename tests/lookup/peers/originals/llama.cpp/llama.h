// Ours, for the test harness: the two names of llama.h that ngram-cache.{h,cpp} use.
#pragma once
#include <cstdint>
typedef int32_t llama_token;
#define LLAMA_TOKEN_NULL -1
