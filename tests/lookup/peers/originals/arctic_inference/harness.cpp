// Test harness (ours) around ArcticInference's SuffixTree, the vendored original: reads commands on
// stdin, one per line, and prints each speculation on one line. Used by
// tests/lookup/peers/test_suffix_decoding.py.
//   N tree max_depth                 create tree number `tree`
//   X tree seq n t1..tn              SuffixTree::extend(seq, tokens)
//   D tree seq                       SuffixTree::remove(seq)
//   S tree n c1..cn max_spec_tokens factor offset min_prob use_tree
//     -> "n t1..tn | p1..pn | q1..qn | score match_len" (probabilities as C99 hex floats)
#include <cstdio>
#include <map>
#include <memory>
#include <vector>

#include "suffix_tree.h"

int main() {
    std::map<int, std::unique_ptr<SuffixTree>> trees;
    char op;
    while (std::scanf(" %c", &op) == 1) {
        int tree;
        std::scanf("%d", &tree);
        if (op == 'N') {
            int depth;
            std::scanf("%d", &depth);
            trees[tree] = std::make_unique<SuffixTree>(depth);
        } else if (op == 'X') {
            int seq, n;
            std::scanf("%d %d", &seq, &n);
            std::vector<int32_t> tokens(n);
            for (auto& t : tokens) std::scanf("%d", &t);
            trees[tree]->extend(seq, tokens);
        } else if (op == 'D') {
            int seq;
            std::scanf("%d", &seq);
            trees[tree]->remove(seq);
        } else if (op == 'S') {
            int n, max_spec, use_tree;
            float factor, offset, min_prob;
            std::scanf("%d", &n);
            std::vector<int32_t> context(n);
            for (auto& t : context) std::scanf("%d", &t);
            std::scanf("%d %f %f %f %d", &max_spec, &factor, &offset, &min_prob, &use_tree);
            Draft d = trees[tree]->speculate(context, max_spec, factor, offset, min_prob, use_tree != 0);
            std::printf("%zu", d.token_ids.size());
            for (auto t : d.token_ids) std::printf(" %d", t);
            std::printf(" |");
            for (auto p : d.parents) std::printf(" %d", p);
            std::printf(" |");
            for (auto q : d.probs) std::printf(" %a", (double) q);
            std::printf(" | %a %d\n", (double) d.score, d.match_len);
            std::fflush(stdout);
        }
    }
    return 0;
}
