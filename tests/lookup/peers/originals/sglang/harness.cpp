// Test harness (ours) around SGLang's TrieCache, the vendored original: reads commands on stdin
// and prints each draft on one line. Used by tests/lookup/peers/test_sglang_ngram.py.
//   C capacity branch_length min_window max_window min_bfs max_bfs prob(0|1)   a new cache
//   I n t1..tn                                  TrieCache::insert
//   B n c1..cn draft_token_num                  buildRecency / buildFrequency on the context
//     -> "m t0..t{m-1} | p0..p{m-1}": fillResult's tokens (root and padding included) and each
//        row's parent (the last earlier column set in its mask row; -1 for the root)
#include <cstdio>
#include <memory>
#include <vector>

#include "trie_cache.h"

int main() {
  std::unique_ptr<ngram::TrieCache> cache;
  ngram::Param param{};
  bool prob = false;
  char op;
  while (std::scanf(" %c", &op) == 1) {
    if (op == 'C') {
      size_t capacity;
      int p;
      std::scanf("%zu %zu %zu %zu %zu %zu %d", &capacity, &param.branch_length, &param.min_match_window_size,
                 &param.max_match_window_size, &param.min_bfs_breadth, &param.max_bfs_breadth, &p);
      prob = p != 0;
      param.match_type = prob ? "PROB" : "BFS";
      cache = std::make_unique<ngram::TrieCache>(capacity, param);
    } else if (op == 'I') {
      int n;
      std::scanf("%d", &n);
      std::vector<int32_t> tokens(n);
      for (auto& t : tokens) std::scanf("%d", &t);
      cache->insert(tokens.data(), tokens.size());
    } else if (op == 'B') {
      int n;
      size_t dtn;
      std::scanf("%d", &n);
      std::vector<int32_t> context(n);
      for (auto& t : context) std::scanf("%d", &t);
      std::scanf("%zu", &dtn);
      int32_t last = context.empty() ? 0 : context.back();
      ngram::Result r = prob ? cache->buildFrequency(context.data(), context.size(), last, dtn, param)
                             : cache->buildRecency(context.data(), context.size(), last, dtn, param);
      int m = r.token.size();
      std::printf("%d", m);
      for (auto t : r.token) std::printf(" %d", t);
      std::printf(" |");
      for (int i = 0; i < m; ++i) {
        int parent = -1;
        for (int j = i - 1; j >= 0; --j) {
          if (r.mask[i * m + j]) { parent = j; break; }
        }
        std::printf(" %d", parent);
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  return 0;
}
