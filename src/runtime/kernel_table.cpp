#include "runtime/kernel_table.h"

#include <algorithm>

namespace tegula::runtime {

KernelTable::Lookup KernelTable::claim(const std::string& id, Result ours) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(id);
  if (it != entries_.end()) {
    if (auto kernel = it->second.kernel.lock()) return Lookup{std::move(kernel), {}, false};
    if (it->second.pending.valid()) return Lookup{nullptr, it->second.pending, false};
  }
  if (it == entries_.end()) prune();
  entries_[id] = Entry{{}, std::move(ours)};
  return Lookup{nullptr, {}, true};
}

void KernelTable::finish(const std::string& id, const std::shared_ptr<CompiledKernel>& kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (kernel)
    entries_[id] = Entry{kernel, {}};
  else
    entries_.erase(id);
}

void KernelTable::update(const std::string& id, const std::shared_ptr<CompiledKernel>& kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(id);
  if (it != entries_.end() && !it->second.pending.valid()) it->second.kernel = kernel;
}

void KernelTable::prune() {
  if (entries_.size() < sweep_at_) return;
  std::erase_if(entries_,
                [](const auto& item) { return !item.second.pending.valid() && item.second.kernel.expired(); });
  sweep_at_ = std::max<size_t>(64, entries_.size() * 2);
}

KernelTable& kernel_table() {
  static KernelTable table;
  return table;
}

}  // namespace tegula::runtime
