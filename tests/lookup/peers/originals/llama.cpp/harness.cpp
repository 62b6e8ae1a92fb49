// Test harness (ours) around llama.cpp's n-gram cache, the vendored original, driven as
// examples/lookup/lookup.cpp drives it. Reads commands on stdin, prints each draft on one line.
// Used by tests/lookup/peers/test_llamacpp_lookup.py.
//   C ngram_min ngram_max history(0|1) path   start afresh with these settings; `path` holds the
//                                             dynamic cache file
//   R n t1..tn      a new request with this prompt (with history, the previous request's context
//                   cache is first merged into the dynamic cache, saved and loaded back, as the
//                   end of one llama-lookup run and the start of the next do)
//   E n t1..tn      committed tokens (common_ngram_cache_update with nnew = n)
//   P n_draft       common_ngram_cache_draft from the last token -> "m t1..tm"
#include <cstdio>
#include <string>
#include <vector>

#include "ngram-cache.h"

int main() {
    int ngram_min = LLAMA_NGRAM_MIN, ngram_max = LLAMA_NGRAM_MAX, history = 0;
    char path[4096] = "";
    bool in_request = false;
    std::vector<llama_token> inp;
    common_ngram_cache nc_context, nc_dynamic, nc_static;
    char op;
    while (std::scanf(" %c", &op) == 1) {
        if (op == 'C') {
            std::scanf("%d %d %d %4095s", &ngram_min, &ngram_max, &history, path);
            in_request = false;
            inp.clear();
            nc_context.clear();
            nc_dynamic.clear();
        } else if (op == 'R' || op == 'E') {
            int n;
            std::scanf("%d", &n);
            std::vector<llama_token> tokens(n);
            for (auto& t : tokens) std::scanf("%d", &t);
            if (op == 'R') {
                if (history && in_request) {
                    common_ngram_cache_merge(nc_dynamic, nc_context);
                    common_ngram_cache_save(nc_dynamic, path);
                    nc_dynamic = common_ngram_cache_load(path);
                }
                in_request = true;
                inp.clear();
                nc_context.clear();
            }
            inp.insert(inp.end(), tokens.begin(), tokens.end());
            common_ngram_cache_update(nc_context, ngram_min, ngram_max, inp, n, false);
        } else if (op == 'P') {
            int n_draft;
            std::scanf("%d", &n_draft);
            std::vector<llama_token> draft;
            if (!inp.empty()) {
                draft.push_back(inp.back());
                common_ngram_cache_draft(inp, draft, n_draft, ngram_min, ngram_max, nc_context, nc_dynamic, nc_static);
            }
            std::printf("%d", draft.empty() ? 0 : (int) draft.size() - 1);
            for (size_t i = 1; i < draft.size(); ++i) std::printf(" %d", draft[i]);
            std::printf("\n");
            std::fflush(stdout);
        }
    }
    return 0;
}
