// InterleavePass's template body; included by pass_steps.h only.
#pragma once

#include <utility>

namespace shardlab {

template <typename Scale>
std::vector<Task> InterleavePass(const std::vector<Task>& tasks, int slices, Scale scale, std::vector<int>* index_map) {
  index_map->assign(tasks.size(), 0);
  // Segments: a run of compute tasks and the collectives after it.
  std::vector<std::pair<size_t, size_t>> segments;
  for (size_t i = 0; i < tasks.size();) {
    const size_t begin = i;
    while (i < tasks.size() && tasks[i].kind == Task::Kind::kCompute) ++i;
    while (i < tasks.size() && tasks[i].kind == Task::Kind::kCollective) ++i;
    segments.emplace_back(begin, i);
  }
  std::vector<Task> out;
  out.reserve(tasks.size() * static_cast<size_t>(slices));
  for (const auto& [begin, end] : segments)
    for (int slice = 0; slice < slices; ++slice)
      for (size_t t = begin; t < end; ++t) {
        Task copy = scale(tasks[t]);
        copy.name += "[" + std::to_string(slice) + "]";
        copy.overlapped = copy.kind == Task::Kind::kCollective;
        (*index_map)[t] = static_cast<int>(out.size());
        out.push_back(std::move(copy));
      }
  return out;
}

}  // namespace shardlab
