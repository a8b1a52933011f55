#include "support/compile_profile.h"

#include "support/slow_compile_notice.h"

namespace tegula {

void CompileProfile::add(std::string_view name, double seconds) {
  for (Phase& phase : phases) {
    if (phase.name == name) {
      phase.seconds += seconds;
      return;
    }
  }
  phases.push_back({std::string(name), seconds});
}

void entered(CompileProfile& profile, std::string_view phase) {
  if (profile.notice != nullptr) profile.notice->enter(phase);
}

double CompileProfile::total() const {
  double sum = 0;
  for (const Phase& phase : phases) sum += phase.seconds;
  return sum;
}

}  // namespace tegula
