// Ours: prints the iteration order of std::unordered_map<int32_t, int32_t> after a sequence of
// `map[key] += n` (emplace when absent), then of its copy. One case a line: "n k1 v1 .. kn vn".
// Used by tests/lookup/peers/test_std_containers.py.
#include <cstdint>
#include <cstdio>
#include <unordered_map>

int main() {
    int n;
    while (std::scanf("%d", &n) == 1) {
        std::unordered_map<int32_t, int32_t> map;
        for (int i = 0; i < n; ++i) {
            int32_t key, value;
            std::scanf("%d %d", &key, &value);
            auto it = map.find(key);
            if (it == map.end()) map.emplace(key, value); else it->second += value;
        }
        const std::unordered_map<int32_t, int32_t> copy = map;
        for (const auto& [key, value] : copy) std::printf("%d:%d ", key, value);
        std::printf("\n");
    }
    return 0;
}
