// Where the kernel cache lives and which directories it refuses
// (resolve_cache_directory, declared in disk_cache.h). Cached kernels are
// code Tegula executes, so the rules are about who else could put files into
// the directory, or swap the directory itself, between our check and our use.
#include <sys/stat.h>
#include <unistd.h>
#include <pwd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "runtime/disk_cache.h"
#include "runtime/errors.h"

namespace tegula::runtime {

namespace {

std::string last_error_text() { return std::strerror(errno); }

[[noreturn]] void refuse(const std::string& message, const std::string& hint) {
  fail(ErrorKind::Value, Diag::UnsafeCacheDirectory, message, hint);
}

// Creates `path` and its missing parents, each with mode 0700.
void make_private_directories(const std::filesystem::path& path) {
  std::filesystem::path partial;
  for (const auto& component : path) {
    partial /= component;
    struct stat existing{};
    if (::stat(partial.c_str(), &existing) == 0) continue;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      refuse("cannot create the cache directory " + path.string() + ": " + last_error_text(),
             "set TEGULA_CACHE_DIR to a writable directory");
  }
}

std::string home_directory() {
  if (const char* home = std::getenv("HOME"); home && *home) return home;
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (getpwuid_r(geteuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found && found->pw_dir)
    return found->pw_dir;
  return {};
}

// The directory as messages name it: as configured, plus where a link led.
std::string describe(const std::string& given, const std::string& real) {
  return given == real ? given : given + " (a link to " + real + ")";
}

// Whoever may write to a parent may rename our directory away and put their
// own in its place, unless the parent has the sticky bit (as /tmp does: then
// only the owner of an entry may rename it). Group-writable parents are
// allowed: shared project folders are common, and the group is trusted.
void check_parents(const std::filesystem::path& real, const std::string& shown) {
  for (std::filesystem::path parent = real.parent_path();; parent = parent.parent_path()) {
    struct stat info{};
    if (::stat(parent.c_str(), &info) == 0 && (info.st_mode & S_IWOTH) && !(info.st_mode & S_ISVTX))
      refuse("the cache directory " + shown + " is inside " + parent.string() +
                 ", which anyone can write to: another user could replace the cache with their own code",
             "set TEGULA_CACHE_DIR to a private directory elsewhere, or run `chmod o-w " + parent.string() +
                 "`");
    if (!parent.has_relative_path()) break;  // checked the root
  }
}

}  // namespace

std::string resolve_cache_directory(const std::string& configured) {
  std::string chosen = configured;
  if (chosen.empty())
    if (const char* env = std::getenv("TEGULA_CACHE_DIR")) chosen = env;
  if (chosen.empty())
    // The XDG spec says relative values are invalid and must be ignored.
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && xdg[0] == '/') chosen = std::string(xdg) + "/tegula";
  if (chosen.empty()) {
    std::string home = home_directory();
    if (home.empty())
      refuse("cannot find a cache directory: $HOME is not set", "set TEGULA_CACHE_DIR to a private directory");
    chosen = home + "/.cache/tegula";
  }

  // Absolute, so entries stay reachable if the process changes directory.
  std::error_code ec;
  std::filesystem::path path = std::filesystem::absolute(chosen, ec).lexically_normal();
  if (ec) path = chosen;
  std::string dir = path.string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();

  make_private_directories(dir);
  // Checked and used through the real path: a symbolic link on the way
  // (which its owner may repoint at any time) is followed once, here.
  std::string real = std::filesystem::canonical(dir, ec).string();
  if (ec)
    refuse("cannot use the cache directory " + dir + ": " + ec.message(),
           "set TEGULA_CACHE_DIR to a private directory");
  std::string shown = describe(dir, real);
  struct stat info{};
  if (::stat(real.c_str(), &info) != 0)
    refuse("cannot use the cache directory " + shown + ": " + last_error_text(),
           "set TEGULA_CACHE_DIR to a private directory");
  if (!S_ISDIR(info.st_mode))
    refuse("the cache directory " + shown + " is not a directory", "set TEGULA_CACHE_DIR to a private directory");
  if (info.st_uid != geteuid())
    refuse("the cache directory " + shown + " is owned by another user (uid " + std::to_string(info.st_uid) +
               "); cached kernels are code Tegula executes, so it must be your own",
           "set TEGULA_CACHE_DIR to a directory you own");
  if ((info.st_mode & 022) != 0)
    refuse("the cache directory " + shown + " is writable by group or others; cached kernels are code " +
               "Tegula executes, so it must be private",
           "run `chmod 700 " + real + "`, or set TEGULA_CACHE_DIR to a private directory");
  check_parents(real, shown);
  return real;
}

}  // namespace tegula::runtime
