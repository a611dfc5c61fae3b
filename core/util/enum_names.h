// The spellings of a closed vocabulary (an enum whose values are 0..N-1), in
// enum order: one table per enum gives its ToString, its parser and the list
// that error messages and command-line checks show.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace shardlab {

template <typename Enum, size_t N>
class EnumNames {
 public:
  constexpr explicit EnumNames(std::array<const char*, N> names) : names_(names) {}

  const char* operator[](Enum value) const { return names_[static_cast<size_t>(value)]; }

  std::optional<Enum> Find(std::string_view name) const {
    for (size_t i = 0; i < N; ++i)
      if (name == names_[i]) return static_cast<Enum>(i);
    return std::nullopt;
  }

  // The value spelt `name`; throws std::invalid_argument naming `what` and the accepted spellings.
  Enum Parse(std::string_view name, const char* what) const {
    if (auto value = Find(name)) return *value;
    std::string accepted;
    for (const char* n : names_) accepted += (accepted.empty() ? "" : ", ") + std::string(n);
    throw std::invalid_argument("unknown " + std::string(what) + " \"" + std::string(name) + "\" (expected one of " +
                                accepted + ")");
  }

  std::vector<std::string> All() const { return {names_.begin(), names_.end()}; }

 private:
  std::array<const char*, N> names_;
};

}  // namespace shardlab
