#include "core/search/dp_search.h"

#include <limits>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include "core/util/progress_report.h"

namespace shardlab {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using Matrix = std::vector<std::vector<double>>;
using Choice = std::vector<std::vector<size_t>>;

struct Edge {
  int from, to;
  Matrix cost;  // [from candidate][to candidate]
  bool alive = true;
};

// One elimination, and how to recover the eliminated node's candidate from
// its neighbours' once they are known.
struct Step {
  enum class Kind { kOp, kMerge, kContract, kTriangle, kStar } kind;
  int node;     // eliminated
  int a, b;     // the neighbours the decision is keyed on (b = -1 when one)
  Choice best;  // [a candidate][b candidate] (or [a candidate][0]) -> node candidate
};

class Eliminator {
 public:
  // Candidates that lay out every incident edge's tensor alike differ only
  // in their own cost: the cheapest of each such set stands for all (exact).
  explicit Eliminator(const StrategyGraph& graph) {
    const auto& nodes = graph.nodes();
    const auto& edges = graph.edges();
    cost_.resize(nodes.size());
    keep_.resize(nodes.size());
    in_.resize(nodes.size());
    out_.resize(nodes.size());
    alive_.assign(nodes.size(), true);
    std::vector<std::vector<std::pair<size_t, bool>>> incident(nodes.size());
    for (size_t e = 0; e < edges.size(); ++e) {
      incident[edges[e].from].push_back({e, true});
      incident[edges[e].to].push_back({e, false});
    }
    for (size_t n = 0; n < nodes.size(); ++n) {
      std::map<std::vector<int>, size_t> best;  // classes on the incident edges -> reduced index
      for (size_t c = 0; c < nodes[n].candidates.size(); ++c) {
        std::vector<int> signature;
        for (auto [e, from] : incident[n]) signature.push_back(graph.EdgeClasses(e, from)[c]);
        const double cost = nodes[n].candidates[c].cost;
        auto [it, inserted] = best.emplace(std::move(signature), keep_[n].size());
        if (inserted) {
          keep_[n].push_back(c);
          cost_[n].push_back(cost);
        } else if (cost < cost_[n][it->second]) {
          keep_[n][it->second] = c;
          cost_[n][it->second] = cost;
        }
      }
    }
    for (size_t e = 0; e < edges.size(); ++e) {
      const int from = edges[e].from, to = edges[e].to;
      const auto& fc = graph.EdgeClasses(e, true);
      const auto& tc = graph.EdgeClasses(e, false);
      std::map<std::pair<int, int>, double> class_cost;
      Matrix m(Size(from), std::vector<double>(Size(to)));
      for (size_t i = 0; i < m.size(); ++i)
        for (size_t j = 0; j < m[i].size(); ++j) {
          const std::pair<int, int> key{fc[keep_[from][i]], tc[keep_[to][j]]};
          auto it = class_cost.find(key);
          if (it == class_cost.end()) it = class_cost.emplace(key, graph.ClassCost(e, key.first, key.second)).first;
          m[i][j] = it->second;
        }
      AddEdge(from, to, std::move(m));
    }
  }

  std::vector<size_t> Run() {
    // Each elimination removes one node (merging parallel edges removes none).
    while (EliminateOne()) ReportProgress(static_cast<double>(log_.size()), static_cast<double>(cost_.size()));
    // What is left: components of one node, or of two nodes joined by one edge.
    std::vector<size_t> choice(cost_.size(), 0);
    std::vector<bool> decided(cost_.size(), false);
    for (size_t n = 0; n < cost_.size(); ++n) {
      if (!alive_[n] || decided[n]) continue;
      const auto outs = Alive(out_[n]);
      if (outs.empty() && Alive(in_[n]).empty()) {
        choice[n] = ArgMin(cost_[n]);
        decided[n] = true;
        continue;
      }
      if (outs.size() != 1) continue;  // the sink of a pair is decided with its source
      const Edge& e = edges_[outs[0]];
      double best = kInf;
      for (size_t i = 0; i < Size(e.from); ++i)
        for (size_t j = 0; j < Size(e.to); ++j) {
          const double v = cost_[e.from][i] + e.cost[i][j] + cost_[e.to][j];
          if (v < best) best = v, choice[e.from] = i, choice[e.to] = j;
        }
      decided[e.from] = decided[e.to] = true;
    }
    for (size_t n = 0; n < cost_.size(); ++n)
      if (alive_[n] && !decided[n]) throw std::logic_error("graph elimination left an irreducible component");
    // Recovery: undo the eliminations from the last one.
    for (auto it = log_.rbegin(); it != log_.rend(); ++it)
      choice[it->node] = it->best[choice[it->a]][it->b >= 0 ? choice[it->b] : 0];
    for (size_t n = 0; n < choice.size(); ++n) choice[n] = keep_[n][choice[n]];
    return choice;
  }

 private:
  size_t Size(int node) const { return cost_[node].size(); }

  int AddEdge(int from, int to, Matrix m) {
    edges_.push_back({from, to, std::move(m)});
    const int id = static_cast<int>(edges_.size() - 1);
    out_[from].insert(id);
    in_[to].insert(id);
    return id;
  }

  void RemoveEdge(int id) {
    edges_[id].alive = false;
    out_[edges_[id].from].erase(id);
    in_[edges_[id].to].erase(id);
  }

  std::vector<int> Alive(const std::set<int>& ids) const { return {ids.begin(), ids.end()}; }

  static size_t ArgMin(const std::vector<double>& v) {
    size_t best = 0;
    for (size_t i = 1; i < v.size(); ++i)
      if (v[i] < v[best]) best = i;
    return best;
  }

  // Edge cost oriented from `node` to its neighbour.
  double Away(const Edge& e, int node, size_t s, size_t t) const {
    return e.from == node ? e.cost[s][t] : e.cost[t][s];
  }

  // MindSpore's order: op, edge, merge, contract, triangle, star.
  bool EliminateOne() {
    for (size_t n = 0; n < cost_.size(); ++n)
      if (alive_[n] && in_[n].size() == 1 && out_[n].size() == 1 && EliminateOp(static_cast<int>(n))) return true;
    for (size_t n = 0; n < cost_.size(); ++n)
      if (alive_[n] && EliminateParallelEdges(static_cast<int>(n))) return true;
    for (size_t n = 0; n < cost_.size(); ++n)
      if (alive_[n] && in_[n].empty() && out_[n].size() == 1) {
        Fold(static_cast<int>(n), *out_[n].begin(), Step::Kind::kMerge);
        return true;
      }
    for (size_t n = 0; n < cost_.size(); ++n)
      if (alive_[n] && in_[n].size() == 1 && out_[n].empty()) {
        Fold(static_cast<int>(n), *in_[n].begin(), Step::Kind::kContract);
        return true;
      }
    for (size_t n = 0; n < cost_.size(); ++n)
      if (alive_[n] && in_[n].empty() && out_[n].size() == 2 && EliminateTriangle(static_cast<int>(n))) return true;
    for (size_t n = 0; n < cost_.size(); ++n)
      if (alive_[n] && in_[n].empty() && out_[n].size() > 2) {
        EliminateStar(static_cast<int>(n));
        return true;
      }
    // Beyond MindSpore's rules: what none of them reduces (a graph with a K4
    // minor, such as a mixture-of-experts layer, whose TopK feeds both the
    // dispatch and the combine) loses the node with the fewest edges as a star.
    int fewest = -1;
    for (size_t n = 0; n < cost_.size(); ++n) {
      const size_t edges = in_[n].size() + out_[n].size();
      if (alive_[n] && edges > 1 && (fewest < 0 || edges < in_[fewest].size() + out_[fewest].size()))
        fewest = static_cast<int>(n);
    }
    if (fewest < 0) return false;
    EliminateStar(fewest);
    return true;
  }

  // u -> v -> w becomes u -> w.
  bool EliminateOp(int v) {
    const Edge& in = edges_[*in_[v].begin()];
    const Edge& out = edges_[*out_[v].begin()];
    const int u = in.from, w = out.to;
    if (u == v || w == v || u == w) return false;
    Matrix m(Size(u), std::vector<double>(Size(w), kInf));
    Choice best(Size(u), std::vector<size_t>(Size(w), 0));
    for (size_t su = 0; su < Size(u); ++su)
      for (size_t sv = 0; sv < Size(v); ++sv) {
        const double head = in.cost[su][sv] + cost_[v][sv];
        for (size_t sw = 0; sw < Size(w); ++sw) {
          const double value = head + out.cost[sv][sw];
          if (value < m[su][sw]) m[su][sw] = value, best[su][sw] = sv;
        }
      }
    const int in_id = *in_[v].begin(), out_id = *out_[v].begin();
    RemoveEdge(in_id);
    RemoveEdge(out_id);
    alive_[v] = false;
    log_.push_back({Step::Kind::kOp, v, u, w, std::move(best)});
    AddEdge(u, w, std::move(m));
    return true;
  }

  // Several edges u -> v become one.
  bool EliminateParallelEdges(int u) {
    std::map<int, std::vector<int>> by_target;
    for (int id : out_[u]) by_target[edges_[id].to].push_back(id);
    for (auto& [v, ids] : by_target) {
      if (ids.size() < 2) continue;
      Matrix sum(Size(u), std::vector<double>(Size(v), 0));
      for (int id : ids) {
        for (size_t i = 0; i < sum.size(); ++i)
          for (size_t j = 0; j < sum[i].size(); ++j) sum[i][j] += edges_[id].cost[i][j];
        RemoveEdge(id);
      }
      AddEdge(u, v, std::move(sum));
      return true;
    }
    return false;
  }

  // Merge (a source into its only successor) or contract (a sink into its
  // only predecessor): the neighbour's cost absorbs the best of the node's.
  void Fold(int node, int edge_id, Step::Kind kind) {
    const Edge& e = edges_[edge_id];
    const int other = e.from == node ? e.to : e.from;
    Choice best(Size(other), std::vector<size_t>(1, 0));
    for (size_t so = 0; so < Size(other); ++so) {
      double min = kInf;
      for (size_t sn = 0; sn < Size(node); ++sn) {
        const double value = cost_[node][sn] + Away(e, node, sn, so);
        if (value < min) min = value, best[so][0] = sn;
      }
      cost_[other][so] += min;
    }
    RemoveEdge(edge_id);
    alive_[node] = false;
    log_.push_back({kind, node, other, -1, std::move(best)});
  }

  // A source with two successors L and R joined by an edge folds into that edge.
  bool EliminateTriangle(int v) {
    const int e1 = *out_[v].begin(), e2 = *std::next(out_[v].begin());
    int l = edges_[e1].to, r = edges_[e2].to;
    int lr = -1;
    for (int id : out_[l])
      if (edges_[id].to == r) lr = id;
    if (lr < 0) {
      for (int id : out_[r])
        if (edges_[id].to == l) lr = id;
      if (lr < 0) return false;
      std::swap(l, r);
    }
    const Edge& to_l = edges_[edges_[e1].to == l ? e1 : e2];
    const Edge& to_r = edges_[edges_[e1].to == l ? e2 : e1];
    Edge& joined = edges_[lr];
    Choice best(Size(l), std::vector<size_t>(Size(r), 0));
    for (size_t sl = 0; sl < Size(l); ++sl)
      for (size_t sr = 0; sr < Size(r); ++sr) {
        double min = kInf;
        for (size_t sv = 0; sv < Size(v); ++sv) {
          const double value = cost_[v][sv] + to_l.cost[sv][sl] + to_r.cost[sv][sr];
          if (value < min) min = value, best[sl][sr] = sv;
        }
        joined.cost[sl][sr] += min;
      }
    RemoveEdge(e1);
    RemoveEdge(e2);
    alive_[v] = false;
    log_.push_back({Step::Kind::kTriangle, v, l, r, std::move(best)});
    return true;
  }

  // A node folds into its first neighbour; its other edges count at their
  // best for each of its candidates (MindSpore's star elimination of a source
  // with many successors: not exact, the last resort).
  void EliminateStar(int v) {
    std::vector<int> edges = Alive(out_[v]);
    for (int id : in_[v]) edges.push_back(id);
    const Edge& first = edges_[edges[0]];
    const int target = first.from == v ? first.to : first.from;
    std::vector<double> rest(Size(v), 0);
    for (size_t k = 1; k < edges.size(); ++k) {
      const Edge& e = edges_[edges[k]];
      const int other = e.from == v ? e.to : e.from;
      for (size_t sv = 0; sv < Size(v); ++sv) {
        double min = kInf;
        for (size_t so = 0; so < Size(other); ++so) min = std::min(min, Away(e, v, sv, so));
        rest[sv] += min;
      }
    }
    Choice best(Size(target), std::vector<size_t>(1, 0));
    for (size_t st = 0; st < Size(target); ++st) {
      double min = kInf;
      for (size_t sv = 0; sv < Size(v); ++sv) {
        const double value = cost_[v][sv] + Away(first, v, sv, st) + rest[sv];
        if (value < min) min = value, best[st][0] = sv;
      }
      cost_[target][st] += min;
    }
    for (int id : edges) RemoveEdge(id);
    alive_[v] = false;
    log_.push_back({Step::Kind::kStar, v, target, -1, std::move(best)});
  }

  std::vector<std::vector<double>> cost_;
  std::vector<std::vector<size_t>> keep_;  // reduced candidate -> the node's candidate
  std::vector<std::set<int>> in_, out_;
  std::vector<bool> alive_;
  std::vector<Edge> edges_;
  std::vector<Step> log_;
};

}  // namespace

std::vector<size_t> DynamicProgrammingSearch(const StrategyGraph& graph) { return Eliminator(graph).Run(); }

std::vector<size_t> ExhaustiveSearch(const StrategyGraph& graph, size_t limit) {
  const auto& nodes = graph.nodes();
  double combos = 1;
  for (const auto& n : nodes) combos *= static_cast<double>(n.candidates.size());
  if (combos > static_cast<double>(limit))
    throw std::invalid_argument("the graph has too many strategy combinations to enumerate");
  std::vector<size_t> choice(nodes.size(), 0), best = choice;
  double best_cost = kInf;
  while (true) {
    const double cost = graph.TotalCost(choice);
    if (cost < best_cost) best_cost = cost, best = choice;
    size_t i = 0;
    while (i < nodes.size() && ++choice[i] == nodes[i].candidates.size()) choice[i++] = 0;
    if (i == nodes.size()) break;
  }
  return best;
}

}  // namespace shardlab
