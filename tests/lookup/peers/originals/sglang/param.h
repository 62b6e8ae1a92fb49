// Ours, for the test harness: the fields of SGLang's ngram::Param (cpp_ngram/param.h) that
// trie_cache.cpp reads, without the batch-size tables and their parser.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace ngram {

struct Param {
  size_t branch_length;
  size_t min_match_window_size;
  size_t max_match_window_size;
  size_t min_bfs_breadth;
  size_t max_bfs_breadth;
  size_t draft_token_num;
  std::string match_type;
};

}  // namespace ngram
