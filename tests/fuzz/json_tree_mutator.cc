#include "tests/fuzz/json_tree_mutator.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace shardlab::fuzz {
namespace {

using json = nlohmann::json;

struct Slot {
  json* node;
  json* parent;  // null for the root
};

void Collect(json& node, json* parent, std::vector<Slot>& out) {
  out.push_back({&node, parent});
  if (node.is_object() || node.is_array())
    for (auto& child : node) Collect(child, &node, out);
}

class TreeMutator {
 public:
  explicit TreeMutator(unsigned seed) : random_(seed) {}

  void Mutate(json& doc) {
    std::vector<Slot> slots;
    Collect(doc, nullptr, slots);
    for (const Slot& s : slots) {
      if (s.node->is_string()) strings_.push_back(s.node->get<std::string>());
      if (s.node->is_object())
        for (const auto& item : s.node->items()) keys_.push_back(item.key());
    }
    const Slot slot = slots[Below(slots.size())];
    switch (Below(10)) {
      case 0:
      case 1:
      case 2:
        EditScalar(*slot.node);
        break;
      case 3:
        ChangeType(*slot.node);
        break;
      case 4:
        *slot.node = json(*slots[Below(slots.size())].node);
        break;  // copy another subtree here
      case 5:
      case 6:
        EditContainer(*slot.node);
        break;
      case 7:
        EditKeys(slot.parent ? *slot.parent : doc);
        break;
      case 8:
        if (slot.parent) RemoveFrom(*slot.parent, slot.node);
        break;
      default:
        EditScalar(*slot.node);
        break;
    }
  }

 private:
  size_t Below(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(random_); }
  bool OneIn(size_t n) { return Below(n) == 0; }

  json EdgeNumber(const json& current) {
    static const json kEdges[] = {0,
                                  -1,
                                  1,
                                  2,
                                  3,
                                  7,
                                  8,
                                  63,
                                  64,
                                  1023,
                                  4096,
                                  4097,
                                  65536,
                                  1 << 20,
                                  2147483647,
                                  2147483648LL,
                                  4294967296LL,
                                  9007199254740993LL,
                                  std::numeric_limits<int64_t>::max(),
                                  std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<uint64_t>::max(),
                                  0.5,
                                  1.5,
                                  -0.0,
                                  1e-9,
                                  1e-320,
                                  1e20,
                                  1e308,
                                  -1e308};
    if (current.is_number() && !OneIn(3)) {
      if (current.is_number_float()) {
        const double v = current.get<double>();
        static const double kFactors[] = {2, 0.5, 1000, -1, 1.0 / 1024};
        return json(v * kFactors[Below(std::size(kFactors))]);
      }
      const __int128 v = current.is_number_unsigned() ? __int128(current.get<uint64_t>()) : current.get<int64_t>();
      static const int kSteps[] = {1, -1, 2, -2};
      __int128 r = 0;
      switch (Below(4)) {
        case 0:
          r = v * 2;
          break;
        case 1:
          r = v / 2;
          break;
        case 2:
          r = -v;
          break;
        default:
          r = v + kSteps[Below(std::size(kSteps))];
          break;
      }
      const __int128 lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
      return r < lo || r > hi ? json(static_cast<double>(r)) : json(static_cast<int64_t>(r));
    }
    return kEdges[Below(std::size(kEdges))];
  }

  std::string Misspell(std::string s) {
    if (s.empty()) return "x";
    const size_t at = Below(s.size());
    switch (Below(4)) {
      case 0:
        s.erase(at, 1);
        break;
      case 1:
        s.insert(at, 1, s[at]);
        break;
      case 2:
        s[at] = static_cast<char>('a' + Below(26));
        break;
      default:
        if (at + 1 < s.size()) std::swap(s[at], s[at + 1]);
        break;
    }
    return s;
  }

  json EdgeString(const json& current) {
    static const char* kEdges[] = {"",
                                   " ",
                                   "0",
                                   "-1",
                                   "1e400",
                                   "NaN",
                                   "inf",
                                   "null",
                                   "\n",
                                   "a\nb\x1b[31mred",
                                   "/",
                                   "..",
                                   "../..",
                                   "/dev/zero",
                                   "/dev/null",
                                   "/proc/self/mem",
                                   "/tmp",
                                   "/nonexistent/file.json",
                                   "\xff\xfe",
                                   "comment",
                                   "float16",
                                   "bfloat16",
                                   "auto_parallel",
                                   "semi_auto_parallel",
                                   "data_parallel",
                                   "simgrid"};
    switch (Below(5)) {
      case 0:
        return kEdges[Below(std::size(kEdges))];
      case 1:
        return current.is_string() ? json(Misspell(current.get<std::string>())) : json("x");
      case 2:
        return std::string(1 + Below(4096), static_cast<char>('a' + Below(26)));
      default:
        return strings_.empty() ? json("") : json(strings_[Below(strings_.size())]);
    }
  }

  void EditScalar(json& node) {
    if (node.is_number())
      node = EdgeNumber(node);
    else if (node.is_string())
      node = EdgeString(node);
    else if (node.is_boolean())
      node = !node.get<bool>();
    else
      ChangeType(node);
  }

  void ChangeType(json& node) {
    switch (Below(8)) {
      case 0:
        node = nullptr;
        break;
      case 1:
        node = OneIn(2);
        break;
      case 2:
        node = EdgeNumber(json());
        break;
      case 3:
        node = EdgeString(node);
        break;
      case 4:
        node = json::array();
        break;
      case 5:
        node = json::object();
        break;
      case 6:
        node = json::array({node});
        break;  // wrapped
      default:
        if ((node.is_array() || node.is_object()) && !node.empty())
          node = json(*node.begin());  // unwrapped
        else
          node = EdgeNumber(json());
    }
  }

  void EditContainer(json& node) {
    if (node.is_object()) return EditKeys(node);
    if (!node.is_array()) return EditScalar(node);
    if (node.empty()) {
      node.push_back(EdgeNumber(json()));
      return;
    }
    const size_t at = Below(node.size());
    switch (Below(6)) {
      case 0:
        node.erase(at);
        break;
      case 1:
        node.insert(node.begin() + static_cast<std::ptrdiff_t>(at), json(node[at]));
        break;
      case 2:
        std::reverse(node.begin(), node.end());
        break;
      case 3:
        node = json::array();
        break;
      case 4: {  // grow by repeating one element
        const json copy = node[at];
        for (size_t i = 0, n = 1 + Below(64); i < n; ++i) node.push_back(copy);
        break;
      }
      default:
        std::swap(node[at], node[Below(node.size())]);
        break;
    }
  }

  void EditKeys(json& object) {
    if (!object.is_object()) return EditContainer(object);
    if (object.empty() || OneIn(3)) {  // add a key the document uses elsewhere, or a misspelled one
      const std::string key = keys_.empty() ? "x"
                              : OneIn(3)    ? Misspell(keys_[Below(keys_.size())])
                                            : keys_[Below(keys_.size())];
      object[key] = strings_.empty() || OneIn(2) ? EdgeNumber(json()) : json(strings_[Below(strings_.size())]);
      return;
    }
    auto it = object.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(Below(object.size())));
    const std::string key = it.key();
    json value = *it;
    object.erase(key);
    if (!OneIn(3)) object[Misspell(key)] = std::move(value);  // renamed; else dropped
  }

  void RemoveFrom(json& parent, const json* child) {
    if (parent.is_array()) {
      for (size_t i = 0; i < parent.size(); ++i)
        if (&parent[i] == child) return void(parent.erase(i));
    } else if (parent.is_object()) {
      for (auto it = parent.begin(); it != parent.end(); ++it)
        if (&*it == child) return void(parent.erase(it));
    }
  }

  std::mt19937 random_;
  std::vector<std::string> strings_;
  std::vector<std::string> keys_;
};

}  // namespace

void MutateJsonTree(nlohmann::json& doc, unsigned seed) { TreeMutator(seed).Mutate(doc); }

}  // namespace shardlab::fuzz
