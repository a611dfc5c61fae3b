#include "core/plan/overlapped_unit.h"

#include <algorithm>
#include <stdexcept>

namespace shardlab {
namespace {

// A step moved to where its task list starts at `offset` in UnitTasks.
PassStep Shifted(PassStep step, int offset) {
  step.first_task += offset;
  step.end_task += offset;
  for (int& c : step.collectives) c += offset;
  for (int& p : step.prefetches) p += offset;
  return step;
}

std::vector<PassStep> Shifted(std::vector<PassStep> steps, int offset) {
  for (PassStep& step : steps) step = Shifted(std::move(step), offset);
  return steps;
}

bool Blocking(const PassStep& s) { return s.compute_seconds == 0 && !s.collectives.empty(); }
bool Computing(const PassStep& s) { return s.compute_seconds > 0 && s.collectives.empty(); }

// One pass's compute run with the other's blocking collectives beside it.
PassStep Beside(const PassStep& compute, const PassStep& collectives) {
  PassStep step = compute;
  step.first_task = std::min(compute.first_task, collectives.first_task);
  step.end_task = std::max(compute.end_task, collectives.end_task);
  step.collectives = collectives.collectives;
  return step;
}

double Compute(const std::vector<PassStep>& steps) {
  double seconds = 0;
  for (const PassStep& s : steps) seconds += s.compute_seconds;
  return seconds;
}

double Communication(const std::vector<PassStep>& steps, const std::vector<Task>& tasks) {
  double seconds = 0;
  for (const PassStep& s : steps) seconds += s.CommunicationSeconds(tasks);
  return seconds;
}

}  // namespace

std::vector<Task> UnitTasks(const StageProgram& stage) {
  std::vector<Task> tasks = stage.backward;
  tasks.insert(tasks.end(), stage.weight_gradient.begin(), stage.weight_gradient.end());
  tasks.insert(tasks.end(), stage.forward.begin(), stage.forward.end());
  return tasks;
}

std::vector<PassStep> OverlapSteps(const std::vector<PassStep>& a, const std::vector<PassStep>& b) {
  std::vector<PassStep> out;
  size_t i = 0, j = 0;
  auto blocking_after = [](const std::vector<PassStep>& steps, size_t k) {
    return k + 1 < steps.size() && Blocking(steps[k + 1]);
  };
  while (i < a.size() && j < b.size()) {
    const PassStep &x = a[i], &y = b[j];
    if (Blocking(x) && Computing(y)) {
      out.push_back(Beside(y, x));
      ++i, ++j;
    } else if (Computing(x) && Blocking(y)) {
      out.push_back(Beside(x, y));
      ++i, ++j;
    } else if (Blocking(x) && !Blocking(y)) {
      out.push_back(b[j++]);  // computes beside collectives of its own; x waits for the next compute run
    } else if (Blocking(x) || Blocking(y)) {
      out.push_back(a[i++]);
    } else if (!blocking_after(a, i) && blocking_after(b, j)) {
      out.push_back(b[j++]);
    } else {
      out.push_back(a[i++]);
    }
  }
  out.insert(out.end(), a.begin() + static_cast<std::ptrdiff_t>(i), a.end());
  out.insert(out.end(), b.begin() + static_cast<std::ptrdiff_t>(j), b.end());
  return out;
}

UnitPass OverlapUnit(const StageProgram& stage, const std::vector<ScheduleItem>& items, int64_t chunks) {
  const int backward_size = static_cast<int>(stage.backward.size());
  const int forward_offset = backward_size + static_cast<int>(stage.weight_gradient.size());
  const std::vector<Task> tasks = UnitTasks(stage);
  UnitPass unit;
  std::vector<PassStep> forward, backward;
  for (const ScheduleItem& item : items) {
    std::vector<PassStep> steps;
    if (item.forward) {
      steps = Shifted(ChunkSteps(stage.forward, chunks, item.chunk, {}, false), forward_offset);
      forward.insert(forward.end(), steps.begin(), steps.end());
    } else if (item.weight_gradient) {
      steps = Shifted(ChunkSteps(stage.weight_gradient, chunks, item.chunk, {}, true), backward_size);
      backward.insert(backward.end(), steps.begin(), steps.end());
    } else {
      steps = ChunkSteps(stage.backward, chunks, item.chunk, {}, true);
      backward.insert(backward.end(), steps.begin(), steps.end());
    }
    unit.compute.push_back(Compute(steps));
    unit.communication.push_back(Communication(steps, tasks));
  }
  unit.steps = OverlapSteps(backward, forward);
  return unit;
}

std::vector<double> UnitSpans(const std::vector<double>& compute, const std::vector<double>& communication,
                              double duration) {
  double total_compute = 0, total_communication = 0;
  for (double c : compute) total_compute += c;
  for (double c : communication) total_communication += c;
  const double beyond = std::max(0.0, duration - total_compute);
  const auto n = static_cast<double>(compute.size());
  std::vector<double> spans;
  for (size_t i = 0; i < compute.size(); ++i)
    spans.push_back(compute[i] + beyond * (total_communication > 0 ? communication[i] / total_communication : 1.0 / n));
  return spans;
}

void CheckOverlappable(const StageProgram& stage) {
  for (const auto* tasks : {&stage.forward, &stage.backward, &stage.weight_gradient})
    for (const Task& t : *tasks) {
      if (t.prefetch || t.prefetches_needed > 0)
        throw std::invalid_argument(
            "overlap_forward_backward is not built with weights gathered ahead of use (task \"" + t.name +
            "\" of stage " + std::to_string(stage.stage) + ")");
      if (t.pcie_copy || t.after_host_copies)
        throw std::invalid_argument("overlap_forward_backward is not built with host copies (task \"" + t.name +
                                    "\" of stage " + std::to_string(stage.stage) + ")");
    }
}

}  // namespace shardlab
