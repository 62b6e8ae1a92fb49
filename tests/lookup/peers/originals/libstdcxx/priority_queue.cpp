// Ours: pops a std::priority_queue of (priority, id) ordered by priority only, to show which of
// equal items comes first. One case a line: "n op1 .. opn", op >= 0 pushes that priority (ids
// count up), op < 0 pops; the rest is popped at the end. Prints the ids in popping order.
// Used by tests/lookup/peers/test_std_containers.py.
#include <cstdio>
#include <queue>
#include <vector>

struct Item { int priority; int id; };
struct ByPriority { bool operator()(const Item& a, const Item& b) const { return a.priority < b.priority; } };

int main() {
    int n;
    while (std::scanf("%d", &n) == 1) {
        std::priority_queue<Item, std::vector<Item>, ByPriority> queue;
        int id = 0;
        for (int i = 0; i < n; ++i) {
            int op;
            std::scanf("%d", &op);
            if (op >= 0) {
                queue.push({op, id++});
            } else if (!queue.empty()) {
                std::printf("%d ", queue.top().id);
                queue.pop();
            }
        }
        while (!queue.empty()) { std::printf("%d ", queue.top().id); queue.pop(); }
        std::printf("\n");
    }
    return 0;
}
