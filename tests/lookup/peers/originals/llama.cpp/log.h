// Ours, for the test harness: ngram-cache.cpp's debug log, silenced.
#pragma once
#define LOG_DBG(...) do {} while (0)
