// The execution core of the host CUDA emulator (cuda_emulator.h includes it
// in its part 1): CUDA threads as fibers under one deterministic scheduler.
//
// Every CUDA thread of a cluster (one CTA without clusters) is a fiber with
// its own stack; exactly one runs at a time, until it blocks (a barrier, a
// warp collective, an mbarrier wait, setmaxnreg.inc) or yields (at the
// asynchronous operations, so that other threads can slip in between). The
// scheduler then picks the next runnable fiber with a seeded random
// generator, and now and then lands one asynchronous operation in flight
// (a bulk tensor copy or store, cuda_emulator_async.h) at a random point, so
// one seed is one reproducible interleaving and several seeds explore others.
//
// Because the scheduler sees every blocked thread and what it waits for, a
// launch in which every live thread is blocked and nothing is in flight is a
// deadlock: it stops and reports who waits for what, instead of hanging. Any
// error the emulator finds (tg_emu::fail) stops the launch the same way:
// every fiber is unwound (a tg_emu::Stop exception from its blocking call)
// and the launch returns the message to Python.
//
// The scheduler's body (and everything else of the emulator that is not a
// template or a small inline helper) is compiled once, into the runtime
// library (cuda_emulator.h: TG_EMU_RUNTIME); a kernel's unit sees the
// declarations, and the state (the launch's scheduler, grid_dim, ...) as
// extern variables that only the runtime defines.
#include <ucontext.h>
#include <sys/mman.h>

#include <map>
#include <random>
#include <sstream>
#include <string>

namespace tg_emu {

struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};

// Thrown inside a fiber to unwind it once the launch stops. Its destructor
// is its key function, defined in the runtime: the one library that emits
// its typeinfo, so a Stop thrown from a unit's code as from the runtime's
// matches the runtime's catches (the fiber's trampoline, the landing).
struct Stop {
  virtual ~Stop();
};

// [lo, hi) of a CTA's shared memory.
struct Range {
  unsigned lo = 0, hi = 0;
};
inline bool overlaps(Range a, Range b) { return a.lo < b.hi && b.lo < a.hi; }
// Written out by hand: the stream formatting of the host's C++ library is
// not used from inside a fiber (on one GPU machine's libstdc++ it printed no
// digits there).
inline std::string hex(unsigned long long v) {
  char digits[16];
  int n = 0;
  do {
    digits[n++] = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v != 0);
  std::string out = "0x";
  while (n > 0) out += digits[--n];
  return out;
}
inline std::string describe(Range r) { return "[" + hex(r.lo) + ", " + hex(r.hi) + ")"; }

inline constexpr int kSlotBytes = 256;

// A barrier of a fixed number of arrivals that restarts once complete: a
// warp's collectives, the named barriers (0 is __syncthreads), the cluster's.
struct Barrier {
  int expected = 0, arrived = 0;
  unsigned generation = 0;
};

struct Warp {
  Barrier sync;
  alignas(16) unsigned char slots[32][kSlotBytes];
  int registers = 0;  // per thread, changed by setmaxnreg
};

// An mbarrier: arrivals expected per phase, arrivals and transaction bytes
// still pending in the current phase, and the phase's number (its parity is
// what try_wait.parity compares).
struct MBarrier {
  unsigned count = 0, pending = 0;
  long long tx = 0;
  unsigned phase = 0;
  int init_thread = -1;
  bool fenced = false;  // fence.mbarrier_init by the initializing thread since
};

// Shared memory an asynchronous reader (a wgmma of a warpgroup) may still
// read: from its issue until the wait_group that retires it.
struct AsyncRead {
  Range range;
  int thread = 0, group = 0;
  std::string what;
  unsigned long long store = 0;  // a bulk tensor store's id (reading its source until it lands), or 0: a wgmma
};

// Shared memory an asynchronous writer (a bulk tensor copy) will write:
// from its issue until it lands.
struct Incoming {
  Range range;
  unsigned long long id = 0;
  std::string what;
};

struct Cta;

// cp.async: a copy deferred to the wait_group covering its group.
struct CpAsyncCopy {
  unsigned dst;
  unsigned char data[16];
  int size, group;
};

// A wgmma waiting for the wait_group that covers its group.
struct WgmmaOp {
  float* d;
  unsigned long long a, b;
  int n, type, trans_a, trans_b, group;
  bool accumulate = true;  // scale-d: 0 ignores d's old value
  // a from registers: every lane's four A fragment words, gathered at issue
  // (the warp's 16 rows of the warpgroup's 64, laid out as mma.sync's A).
  std::shared_ptr<std::array<std::array<unsigned, 4>, 32>> a_registers = nullptr;
};

// What was thread_local to a CUDA thread.
struct ThreadState {
  Dim3 thread, block;
  Cta* cta = nullptr;
  int next_group = 0;  // cp.async commit groups so far
  std::vector<CpAsyncCopy> copies;
  int wgmma_groups = 0;  // wgmma commit groups so far
  std::vector<WgmmaOp> wgmmas;
  int bulk_groups = 0;  // bulk (TMA store) commit groups so far
  std::vector<unsigned> unfenced;  // 16-byte chunks it wrote through the generic proxy since its last fence.proxy.async
  bool exited = false;
};

struct Cluster;

struct Cta {
  Cluster* cluster = nullptr;
  int rank = 0;  // in the cluster
  Dim3 block;
  int threads = 0;
  std::vector<unsigned char> smem;
  std::vector<std::unique_ptr<Warp>> warps;
  Barrier named[16];
  std::map<unsigned, MBarrier> mbarriers;
  std::vector<AsyncRead> async_reads;
  std::vector<Incoming> incoming;
  // Per 16-byte chunk of shared memory: the thread whose generic-proxy write
  // of it no fence.proxy.async has covered yet, or -1.
  std::vector<int> unfenced_writer;
  long long register_pool = 0;  // registers setmaxnreg.dec freed and .inc may take
  int launch_registers = 0;     // per thread at launch; 0: not accounted
  int vote = 0;
};

// The CTAs that run together (one without clusters) and their barrier.
struct Cluster {
  std::vector<std::unique_ptr<Cta>> ctas;
  Barrier sync;
  int threads = 0;
};

// Something the asynchronous proxy does later: lands when the scheduler
// picks it at random, or when a thread waits for it.
struct AsyncOp {
  virtual ~AsyncOp() = default;
  virtual void land() = 0;  // may fail()
  virtual std::string describe() const = 0;
  // Whether it completes transaction bytes on the mbarrier at `bar` of `cta`.
  virtual bool signals(const Cta*, unsigned /*bar*/) const { return false; }
  // Whether it may still be in flight when every thread has exited (a bulk
  // store whose source a wait_group.read released): it lands then.
  virtual bool outlives_threads() const { return false; }
};

struct Fiber {
  ucontext_t context;
  void* stack = nullptr;
  ThreadState state;
  std::function<void()> body;
  bool started = false, done = false;
  std::function<bool()> ready;  // set while blocked
  std::function<std::string()> waiting_for;
  unsigned long long seen_version = ~0ull;  // state version at which `ready` was last false
};

class Scheduler {
 public:
  static constexpr size_t kStackBytes = 8u << 20;  // as a default std::thread

  Scheduler(unsigned long long seed, double land_rate) : rng_(seed), land_rate_(land_rate) {}
  ~Scheduler() {
    for (auto& f : fibers_)
      if (f->stack) munmap(f->stack, kStackBytes);
  }

  void spawn(ThreadState state, std::function<void()> body);

  // Runs every fiber to its end; the first error (or the deadlock) found,
  // or "" when none.
  std::string run();

  // --- called from a fiber ---
  ThreadState& self() { return running_->state; }
  bool in_fiber() const { return running_ != nullptr; }
  // Until ready() holds; waiting_for() says what for, should nothing else
  // ever run again.
  void block(std::function<bool()> ready, std::function<std::string()> waiting_for);
  // Lets the scheduler run another thread (or land an asynchronous op) here.
  void yield() {
    if (running_) switch_to_main();
  }
  // Something a blocked thread may wait for has changed.
  void touch() { ++version_; }
  [[noreturn]] void fail(const std::string& message);
  void add_async(std::unique_ptr<AsyncOp> op) { in_flight_.push_back(std::move(op)); }
  // Lands every op in flight that `which` selects, in issue order.
  template <class Which>
  void land_where(Which which) {
    for (size_t i = 0; i < in_flight_.size();) {
      if (which(*in_flight_[i])) {
        std::unique_ptr<AsyncOp> op = std::move(in_flight_[i]);
        in_flight_.erase(in_flight_.begin() + static_cast<long>(i));
        op->land();
        touch();
      } else {
        ++i;
      }
    }
  }
  template <class Visit>
  void for_each_async(Visit visit) {
    for (auto& op : in_flight_) visit(*op);
  }
  std::function<void(ThreadState&)> at_thread_exit;  // checks when a thread ends

 private:
  static void trampoline();
  void switch_to_main();
  void resume(Fiber& f);
  std::string deadlock_report();

  std::vector<std::unique_ptr<Fiber>> fibers_;
  std::vector<std::unique_ptr<AsyncOp>> in_flight_;
  Fiber* running_ = nullptr;
  ucontext_t main_;
  std::mt19937_64 rng_;
  double land_rate_;
  unsigned long long version_ = 0;
  bool stopping_ = false;
  std::string error_;
};

// Defined once, in the runtime (TG_EMU_RUNTIME below): an inline variable
// here would give every unit its own copy, which a unit's library, loaded
// with RTLD_LOCAL, would bind ahead of the runtime's.
extern Scheduler* scheduler;  // the launch's (launches are not re-entrant)
extern Dim3 grid_dim, block_dim, cluster_dim;

inline ThreadState& me() { return scheduler->self(); }
[[noreturn]] inline void fail(const std::string& message) { scheduler->fail(message); }
inline void yield() { scheduler->yield(); }
inline void touch() { scheduler->touch(); }
inline void block(std::function<bool()> ready, std::function<std::string()> waiting_for) {
  scheduler->block(std::move(ready), std::move(waiting_for));
}

std::string thread_name(const ThreadState& t);

// --- blocking primitives every part uses --------------------------------------------------------

// One arrival on `b` (`expected` arrivals complete it); waits for its
// completion when `wait`. `name` says which barrier, for errors.
void barrier_arrive(Barrier& b, int expected, bool wait, const std::string& name);

#ifdef TG_EMU_RUNTIME
// ---- the runtime's definitions ----------------------------------------------------------------
Scheduler* scheduler = nullptr;
Dim3 grid_dim, block_dim, cluster_dim{1, 1, 1};

Stop::~Stop() = default;

std::string thread_name(const ThreadState& t) {
  std::string s = "thread " + std::to_string(t.thread.x);
  if (cluster_dim.x > 1) s = "CTA " + std::to_string(t.cta->rank) + " " + s;
  return s;
}

void Scheduler::spawn(ThreadState state, std::function<void()> body) {
  auto f = std::make_unique<Fiber>();
  f->state = std::move(state);
  f->body = std::move(body);
  fibers_.push_back(std::move(f));
}

void Scheduler::block(std::function<bool()> ready, std::function<std::string()> waiting_for) {
  if (ready()) return;
  running_->ready = std::move(ready);
  running_->waiting_for = std::move(waiting_for);
  running_->seen_version = ~0ull;
  switch_to_main();
}

void Scheduler::fail(const std::string& message) {
  if (error_.empty()) error_ = message;
  throw Stop{};
}

void Scheduler::switch_to_main() {
  Fiber* f = running_;
  swapcontext(&f->context, &main_);
  if (stopping_) throw Stop{};
}

void Scheduler::trampoline() {
  Scheduler& s = *scheduler;
  Fiber& f = *s.running_;
  try {
    f.body();
    f.state.exited = true;
    if (s.at_thread_exit) s.at_thread_exit(f.state);
  } catch (const Stop&) {
  } catch (const std::exception& e) {
    if (s.error_.empty()) s.error_ = std::string("exception in the kernel: ") + e.what();
  }
  f.done = true;
  setcontext(&s.main_);
}

void Scheduler::resume(Fiber& f) {
  running_ = &f;
  f.ready = nullptr;
  f.waiting_for = nullptr;
  if (!f.started) {
    f.started = true;
    f.stack = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (f.stack == MAP_FAILED) {
      f.stack = nullptr;
      error_ = "cannot map a fiber stack";
      f.done = true;
      running_ = nullptr;
      return;
    }
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack;
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = nullptr;
    makecontext(&f.context, trampoline, 0);
  }
  swapcontext(&main_, &f.context);
  running_ = nullptr;
}

std::string Scheduler::run() {
  // Threads whose wait has just been satisfied run first half of the time:
  // a waiting warp reacts at once on the device, so a producer refills a
  // stage as soon as its release completes, before the releasing warps go on.
  std::vector<Fiber*> runnable, woken;
  while (error_.empty()) {
    runnable.clear();
    woken.clear();
    bool alive = false;
    for (auto& f : fibers_) {
      if (f->done) continue;
      alive = true;
      if (!f->ready) {
        runnable.push_back(f.get());
      } else if (f->seen_version != version_) {
        if (f->ready()) {
          runnable.push_back(f.get());
          woken.push_back(f.get());
        } else {
          f->seen_version = version_;
        }
      }
    }
    if (!alive) break;
    bool land = !in_flight_.empty() &&
                (runnable.empty() || std::uniform_real_distribution<double>(0, 1)(rng_) < land_rate_);
    if (land) {
      size_t i = std::uniform_int_distribution<size_t>(0, in_flight_.size() - 1)(rng_);
      std::unique_ptr<AsyncOp> op = std::move(in_flight_[i]);
      in_flight_.erase(in_flight_.begin() + static_cast<long>(i));
      try {
        op->land();
      } catch (const Stop&) {
      }
      touch();
      continue;
    }
    if (runnable.empty()) {
      error_ = deadlock_report();
      break;
    }
    std::vector<Fiber*>& pool = !woken.empty() && rng_() % 2 ? woken : runnable;
    resume(*pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng_)]);
  }
  // Unwind every fiber still alive: its blocking call throws Stop.
  stopping_ = true;
  for (auto& f : fibers_)
    if (f->started && !f->done) resume(*f);
  if (error_.empty()) land_where([](const AsyncOp& op) { return op.outlives_threads(); });
  if (error_.empty() && !in_flight_.empty())
    error_ = "every thread has exited with " + std::to_string(in_flight_.size()) +
             " asynchronous operation(s) still in flight, the first: " + in_flight_.front()->describe();
  return error_;
}

// Threads grouped by what they wait for, as ranges of thread indices.
std::string Scheduler::deadlock_report() {
  std::map<std::string, std::vector<std::string>> by_wait;
  for (auto& f : fibers_) {
    if (f->done || !f->ready) continue;
    by_wait[f->waiting_for ? f->waiting_for() : std::string("?")].push_back(thread_name(f->state));
  }
  std::string out = "deadlock: every live thread is blocked and nothing is in flight:";
  for (auto& [what, who] : by_wait) {
    out += "\n  " + std::to_string(who.size()) + " thread(s) (" + who.front();
    if (who.size() > 1) out += " .. " + who.back();
    out += ") wait for " + what;
  }
  return out;
}

void barrier_arrive(Barrier& b, int expected, bool wait, const std::string& name) {
  if (b.arrived == 0) {
    b.expected = expected;
  } else if (b.expected != expected) {
    fail(name + ": " + thread_name(me()) + " arrives expecting " + std::to_string(expected) +
         " threads, the arrivals before it expected " + std::to_string(b.expected));
  }
  unsigned generation = b.generation;
  if (++b.arrived == b.expected) {
    b.arrived = 0;
    ++b.generation;
    touch();
    return;
  }
  if (!wait) return;
  Barrier* p = &b;
  block([p, generation] { return p->generation != generation; },
        [p, name] {
          return name + " (" + std::to_string(p->arrived) + " of " + std::to_string(p->expected) + " arrived)";
        });
}
#endif  // TG_EMU_RUNTIME

}  // namespace tg_emu
