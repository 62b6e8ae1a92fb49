// Ours, for the test harness: what ngram-cache.cpp takes from common.h and ggml.h.
#pragma once
#include <cstdio>
#include <cstdlib>
#include "llama.h"
#define GGML_ASSERT(x) do { if (!(x)) { std::fprintf(stderr, "GGML_ASSERT(%s) failed\n", #x); std::abort(); } } while (0)
inline int64_t ggml_time_ms() { return 0; }
