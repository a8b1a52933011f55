#include "runtime/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <sstream>

#include "runtime/errors.h"
#include "runtime/lock_wait.h"
#include "support/sha256.h"

namespace tegula::runtime {

namespace {

constexpr std::string_view kManifestMagic = "tegula-kernel-cache";
constexpr std::string_view kStagesMagic = "tegula-kernel-stages";

std::string errno_text() { return std::strerror(errno); }

// Closes its descriptor at scope exit.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::optional<std::string> read_all(int fd) {
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return bytes;
    bytes.append(buffer, static_cast<size_t>(n));
  }
}

// A file the driver itself just produced (the built library).
std::optional<std::string> read_file(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return std::nullopt;
  return read_all(fd.get());
}

// One file of an entry, as read.
struct EntryFile {
  std::string bytes;
  dev_t device = 0;  // which file it was: a later rename() over the path
  ino_t inode = 0;   // gives another (device, inode)
};

// The bytes of an entry file if it is one this user's Tegula could have
// written: a regular file (not a symbolic link, FIFO or device) owned by the
// current user and not writable by group or others. Otherwise nullopt, with
// the reason in `*why` ("the <what> is missing", "... is a symbolic link"...).
// O_NONBLOCK: opening a FIFO planted as an entry must not hang the reader.
std::optional<EntryFile> read_entry_file(const std::string& path, std::string_view what, std::string* why) {
  auto refuse = [&](std::string_view problem) -> std::optional<EntryFile> {
    *why = "the " + std::string(what) + " " + std::string(problem);
    return std::nullopt;
  };
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return refuse("is missing");
    if (errno == ELOOP) return refuse("is a symbolic link");
    return refuse("cannot be read: " + errno_text());
  }
  struct stat info{};
  if (::fstat(fd.get(), &info) != 0) return refuse("cannot be read: " + errno_text());
  if (!S_ISREG(info.st_mode)) return refuse("is not a regular file");
  if (info.st_uid != ::geteuid()) return refuse("is owned by another user (uid " + std::to_string(info.st_uid) + ")");
  if ((info.st_mode & 022) != 0) return refuse("is writable by group or others");
  std::optional<std::string> bytes = read_all(fd.get());
  if (!bytes) return refuse("cannot be read: " + errno_text());
  return EntryFile{std::move(*bytes), info.st_dev, info.st_ino};
}

bool is_identifier(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return !std::isdigit(static_cast<unsigned char>(text[0]));
}

bool is_ascii_word_char(unsigned char c) { return c < 0x80 && (std::isalnum(c) || c == '_'); }

// Kernel and parameter names as the manifest writes them: Python identifiers
// may hold any letter (`kérnel_ñ`), but a manifest line is split at spaces
// and read back byte-exactly, so every byte outside [A-Za-z0-9_] is written
// as %HH. ASCII names read as before.
std::string encode_name(std::string_view name) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : name) {
    if (is_ascii_word_char(c)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// The name encode_name wrote, or nullopt when the text is not such a name of
// an identifier: its ASCII bytes must be [A-Za-z0-9_] (not leading with a
// digit); bytes past ASCII are the letters of a UTF-8 identifier.
std::optional<std::string> decode_name(std::string_view text) {
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string name;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      if (!is_ascii_word_char(static_cast<unsigned char>(text[i]))) return std::nullopt;
      name += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    int high = digit(text[i + 1]), low = digit(text[i + 2]);
    unsigned char byte = static_cast<unsigned char>(high * 16 + low);
    // Only bytes the encoder escapes: one text per name.
    if (high < 0 || low < 0 || byte < 0x80) return std::nullopt;
    name += static_cast<char>(byte);
    i += 2;
  }
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return std::nullopt;
  return name;
}

// A pointer parameter's effects as the manifest writes them: "rwa" with a
// '-' for each that does not hold ("r--": read only).
std::string effects_text(const passes::PointerEffects& e) {
  return std::string(e.read ? "r" : "-") + (e.written ? "w" : "-") + (e.atomic ? "a" : "-");
}

std::optional<passes::PointerEffects> parse_effects(std::string_view text) {
  if (text.size() != 3 || (text[0] != 'r' && text[0] != '-') || (text[1] != 'w' && text[1] != '-') ||
      (text[2] != 'a' && text[2] != '-'))
    return std::nullopt;
  return passes::PointerEffects{text[0] == 'r', text[1] == 'w', text[2] == 'a'};
}

std::optional<ir::Type> parse_param_type(const std::string& text) {
  ir::Scalar scalar;
  if (text.size() > 5 && text.starts_with("ptr<") && text.back() == '>') {
    if (!ir::parse_scalar(text.substr(4, text.size() - 5), &scalar)) return std::nullopt;
    return ir::Type::ptr(scalar);
  }
  if (!ir::parse_scalar(text, &scalar)) return std::nullopt;
  return ir::Type::of(scalar);
}

// Splits `text` into lines; false if the text does not end in a newline
// (a truncated write).
bool split_lines(std::string_view text, std::vector<std::string_view>* lines) {
  if (text.empty() || text.back() != '\n') return false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    lines->push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return true;
}

std::vector<std::string> words(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

template <class Int>
bool parse_int(std::string_view text, Int* out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

void check_key(const std::string& key) {
  // Keys become file names: only our own hex digests may reach the file system.
  TEGULA_ASSERT(is_hex_digest(key), "malformed cache key '" + key + "'");
}

}  // namespace

bool is_artifact_extension(std::string_view text) {
  if (text.empty() || text.size() > 16) return false;
  for (char c : text)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  return true;
}

bool is_hex_digest(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// --- manifest ------------------------------------------------------------------

std::string serialize_manifest(const CacheManifest& manifest) {
  std::string out = std::string(kManifestMagic) + " " + std::to_string(kCacheFormatVersion) + "\n";
  out += "backend " + manifest.backend + "\n";
  out += "kernel " + encode_name(manifest.kernel_name) + "\n";
  for (const ir::Param& p : manifest.params)
    out += "param " + encode_name(p.name) + " " + ir::to_string(p.type) + " " + std::to_string(p.divisibility) +
           (p.by_value_bytes > 0 ? " by_value=" + std::to_string(p.by_value_bytes) : std::string()) + "\n";
  if (manifest.shape.threads > 0)
    out += "launch " + std::to_string(manifest.shape.threads) + " " + std::to_string(manifest.shape.shared_bytes) +
           "\n";
  for (size_t i = 0; i < manifest.effects.size() && i < manifest.params.size(); ++i)
    if (manifest.effects[i] != passes::PointerEffects{})
      out += "effect " + encode_name(manifest.params[i].name) + " " + effects_text(manifest.effects[i]) + "\n";
  for (const passes::DebugSite& site : manifest.debug_sites) out += "site " + passes::to_text(site) + "\n";
  for (const backends::TensorMapParam& map : manifest.tensor_maps) out += "tmap " + backends::to_text(map) + "\n";
  out += "artifact " + manifest.artifact_extension + " " + manifest.artifact_sha256 + "\n";
  out += "stages " + (manifest.stages_sha256.empty() ? std::string("-") : manifest.stages_sha256) + "\n";
  out += "sum " + sha256_hex(out) + "\n";
  out += "end\n";
  return out;
}

std::optional<CacheManifest> parse_manifest(std::string_view text) {
  std::vector<std::string_view> lines;
  if (!split_lines(text, &lines) || lines.size() < 6) return std::nullopt;
  if (lines.front() != std::string(kManifestMagic) + " " + std::to_string(kCacheFormatVersion))
    return std::nullopt;
  if (lines.back() != "end") return std::nullopt;
  // The launcher trusts what the manifest says of the artifact (its
  // parameters, which pointers it writes): a manifest edited or damaged
  // after it was written must not be read, so its last line before `end`
  // is the hash of every byte above it.
  std::string_view sum_line = lines[lines.size() - 2];
  size_t signed_bytes = text.size() - sum_line.size() - std::string_view("\nend\n").size();
  if (!sum_line.starts_with("sum ") || sum_line.substr(4) != sha256_hex(text.substr(0, signed_bytes)))
    return std::nullopt;
  lines.erase(lines.end() - 2);

  CacheManifest manifest;
  bool seen_backend = false, seen_kernel = false, seen_launch = false, seen_effect = false, seen_site = false,
       seen_artifact = false, seen_stages = false;
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    std::vector<std::string> w = words(lines[i]);
    if (w.size() == 2 && w[0] == "backend" && i == 1 && is_identifier(w[1])) {
      manifest.backend = w[1];
      seen_backend = true;
    } else if (w.size() == 2 && w[0] == "kernel" && seen_backend && !seen_kernel && decode_name(w[1])) {
      manifest.kernel_name = *decode_name(w[1]);
      seen_kernel = true;
    } else if ((w.size() == 4 || w.size() == 5) && w[0] == "param" && seen_kernel && !seen_launch && !seen_effect &&
               !seen_site && !seen_artifact && decode_name(w[1])) {
      std::optional<ir::Type> type = parse_param_type(w[2]);
      ir::Param param{*decode_name(w[1]), type.value_or(ir::Type{}), 1};
      if (!type || !parse_int(w[3], &param.divisibility) || param.divisibility < 1) return std::nullopt;
      // A host descriptor's bytes passed by value (ir::Param::by_value_bytes): "by_value=N" on pointers only.
      if (w.size() == 5 && (!w[4].starts_with("by_value=") || !type->is_pointer() ||
                            !parse_int(w[4].substr(9), &param.by_value_bytes) || param.by_value_bytes < 1))
        return std::nullopt;
      manifest.params.push_back(std::move(param));
    } else if (w.size() == 3 && w[0] == "launch" && seen_kernel && !seen_launch && !seen_effect && !seen_site &&
               !seen_artifact) {
      backends::LaunchShape& shape = manifest.shape;
      if (!parse_int(w[1], &shape.threads) || !parse_int(w[2], &shape.shared_bytes) || shape.threads < 1 ||
          shape.shared_bytes < 0)
        return std::nullopt;
      seen_launch = true;
    } else if (w.size() == 3 && w[0] == "effect" && seen_kernel && !seen_site && !seen_artifact) {
      manifest.effects.resize(manifest.params.size());
      std::optional<std::string> name = decode_name(w[1]);
      size_t i = 0;
      while (name && i < manifest.params.size() && manifest.params[i].name != *name) ++i;
      std::optional<passes::PointerEffects> effects = parse_effects(w[2]);
      if (i == manifest.params.size() || !manifest.params[i].type.is_pointer() || !effects ||
          manifest.effects[i] != passes::PointerEffects{} || *effects == passes::PointerEffects{})
        return std::nullopt;
      manifest.effects[i] = *effects;
      seen_effect = true;
    } else if (!w.empty() && w[0] == "site" && seen_kernel && !seen_artifact) {
      std::optional<passes::DebugSite> site = passes::parse_debug_site(lines[i].substr(5));
      if (!site) return std::nullopt;
      manifest.debug_sites.push_back(std::move(*site));
      seen_site = true;
    } else if (!w.empty() && w[0] == "tmap" && seen_kernel && !seen_artifact) {
      std::optional<backends::TensorMapParam> map = backends::parse_tensor_map_param(lines[i].substr(5));
      auto is_param = [&](int index) { return index >= 0 && static_cast<size_t>(index) < manifest.params.size(); };
      if (!map || !is_param(map->base) || !manifest.params[static_cast<size_t>(map->base)].type.is_pointer())
        return std::nullopt;
      for (const auto* extents : {&map->shape, &map->strides})
        for (const backends::TensorMapExtent& e : *extents)
          if ((e.param >= 0 && !is_param(e.param)) ||
              std::any_of(e.factors.begin(), e.factors.end(), [&](int f) { return !is_param(f); }))
            return std::nullopt;
      manifest.tensor_maps.push_back(std::move(*map));
    } else if (w.size() == 3 && w[0] == "artifact" && seen_kernel && !seen_artifact && is_artifact_extension(w[1]) &&
               is_hex_digest(w[2])) {
      manifest.artifact_extension = w[1];
      manifest.artifact_sha256 = w[2];
      seen_artifact = true;
    } else if (w.size() == 2 && w[0] == "stages" && seen_artifact && !seen_stages &&
               (w[1] == "-" || is_hex_digest(w[1]))) {
      if (w[1] != "-") manifest.stages_sha256 = w[1];
      seen_stages = true;
    } else {
      return std::nullopt;
    }
  }
  if (!seen_stages) return std::nullopt;
  manifest.effects.resize(manifest.params.size());
  return manifest;
}

// --- stages --------------------------------------------------------------------
//
//   tegula-kernel-stages 1
//   ir <byte count> <stage name>\n<bytes>\n      (once per stage, in order)
//   layouts|ptx|log <byte count>\n<bytes>\n      (CUDA only, each optional, in this order)
//   source <byte count>\n<bytes>\n
//   end\n
// Byte counts, not delimiters, so IR and source text need no escaping.

std::string serialize_stages(const Stages& stages) {
  std::string out = std::string(kStagesMagic) + " " + std::to_string(kCacheFormatVersion) + "\n";
  for (const passes::StageDump& dump : stages.ir) {
    std::string name = dump.stage;
    for (char& c : name)
      if (c == '\n') c = ' ';
    out += "ir " + std::to_string(dump.ir.size()) + " " + name + "\n" + dump.ir + "\n";
  }
  auto section = [&](const char* tag, const std::string& bytes) {
    if (!bytes.empty()) out += std::string(tag) + " " + std::to_string(bytes.size()) + "\n" + bytes + "\n";
  };
  section("layouts", stages.layouts);
  section("ptx", stages.ptx);
  section("log", stages.compile_log);
  out += "source " + std::to_string(stages.source.size()) + "\n" + stages.source + "\n";
  out += "end\n";
  return out;
}

std::optional<Stages> parse_stages(std::string_view text) {
  size_t pos = 0;
  auto next_line = [&](std::string_view* line) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) return false;
    *line = text.substr(pos, end - pos);
    pos = end + 1;
    return true;
  };
  auto take_bytes = [&](std::string_view count_text, std::string* out) {
    size_t count = 0;
    if (!parse_int(count_text, &count) || count > text.size() - pos || text.size() - pos - count < 1 ||
        text[pos + count] != '\n')
      return false;
    *out = std::string(text.substr(pos, count));
    pos += count + 1;
    return true;
  };

  std::string_view line;
  if (!next_line(&line) || line != std::string(kStagesMagic) + " " + std::to_string(kCacheFormatVersion))
    return std::nullopt;
  Stages stages;
  bool seen_source = false;
  // The optional CUDA sections, in the order they must appear.
  const std::pair<const char*, std::string*> sections[] = {
      {"layouts", &stages.layouts}, {"ptx", &stages.ptx}, {"log", &stages.compile_log}};
  size_t next_section = 0;
  auto section_index = [&](const std::string& tag) {
    for (size_t i = next_section; i < std::size(sections); ++i)
      if (tag == sections[i].first) return i;
    return std::size(sections);
  };
  while (next_line(&line)) {
    std::vector<std::string> w = words(line);
    if (w.size() == 2 && !seen_source && section_index(w[0]) < std::size(sections)) {
      size_t i = section_index(w[0]);
      if (!take_bytes(w[1], sections[i].second)) return std::nullopt;
      next_section = i + 1;
    } else if (w.size() >= 3 && w[0] == "ir" && !seen_source && next_section == 0) {
      // The name is the rest of the line after the count, spaces included.
      size_t name_start = line.find(' ', 3);
      passes::StageDump dump{std::string(line.substr(name_start + 1)), {}};
      if (!take_bytes(w[1], &dump.ir)) return std::nullopt;
      stages.ir.push_back(std::move(dump));
    } else if (w.size() == 2 && w[0] == "source" && !seen_source) {
      if (!take_bytes(w[1], &stages.source)) return std::nullopt;
      seen_source = true;
    } else if (w.size() == 1 && w[0] == "end" && seen_source && pos == text.size()) {
      return stages;
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// --- entries -------------------------------------------------------------------------

std::string DiskCache::artifact_path(const std::string& key, std::string_view extension) const {
  return directory_ + "/" + key + "." + std::string(extension);
}
std::string DiskCache::manifest_path(const std::string& key) const { return directory_ + "/" + key + ".meta"; }
std::string DiskCache::stages_path(const std::string& key) const { return directory_ + "/" + key + ".stages"; }
std::string DiskCache::lock_path(const std::string& key) const { return directory_ + "/" + key + ".lock"; }

std::string DiskCache::temporary_path(const std::string& key, std::string_view extension) const {
  // pid + 64 random bits: unique across processes and threads without any shared counter.
  std::random_device entropy;
  uint64_t nonce = (uint64_t{entropy()} << 32) ^ entropy();
  char nonce_hex[17];
  std::snprintf(nonce_hex, sizeof nonce_hex, "%016llx", static_cast<unsigned long long>(nonce));
  return directory_ + "/.tmp-" + key.substr(0, 16) + "-" + std::to_string(::getpid()) + "-" + nonce_hex + "." +
         std::string(extension);
}

void DiskCache::write_atomically(const std::string& key, const std::string& path, std::string_view bytes) const {
  std::string temporary = temporary_path(key, "part");
  backends::write_new_file(temporary, bytes);
  // No fsync: a file a crash leaves short or empty fails its hash (or the
  // manifest's `end` line) and is rebuilt, which is cheaper than syncing
  // every entry.
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string reason = errno_text();
    ::unlink(temporary.c_str());
    fail(ErrorKind::Value, Diag::CacheWriteFailed, "cannot write " + path + ": " + reason);
  }
}

std::optional<std::string> DiskCache::read_private_file(const std::string& path, std::string_view what,
                                                        std::string* why) const {
  std::string reason;
  std::optional<EntryFile> file = read_entry_file(path, what, &reason);
  if (!file) {
    if (why) *why = std::move(reason);
    return std::nullopt;
  }
  return std::move(file->bytes);
}

// --- the entry lock ----------------------------------------------------------------

EntryLock::EntryLock(EntryLock&& other) noexcept : key_(std::move(other.key_)), fd_(other.fd_) { other.fd_ = -1; }

EntryLock& EntryLock::operator=(EntryLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    key_ = std::move(other.key_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

// Closing the descriptor releases the flock.
EntryLock::~EntryLock() {
  if (fd_ >= 0) ::close(fd_);
}

EntryLock DiskCache::lock(const std::string& key) const {
  check_key(key);
  // flock, not fcntl locks: those belong to the process, so a second
  // descriptor of the same file closed anywhere in it would drop the lock.
  int fd = ::open(lock_path(key).c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0) return EntryLock(key, -1);  // e.g. a read-only cache: store() reports that itself
  try {
    if (acquire_entry_lock(fd, lock_path(key), key)) return EntryLock(key, fd);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);  // no locks here, or a holder that will not finish: go on unserialized
  return EntryLock(key, -1);
}

// --- loading -----------------------------------------------------------------------

std::optional<CacheEntry> DiskCache::load(const std::string& key, std::string* why) const {
  check_key(key);
  std::string reason;
  auto miss = [&](std::string text) -> std::optional<CacheEntry> {
    if (why) *why = std::move(text);
    return std::nullopt;
  };
  std::optional<CacheManifest> manifest = load_manifest(key, &reason);
  if (!manifest) return miss(reason);
  std::string path = artifact_path(key, manifest->artifact_extension);
  std::optional<EntryFile> artifact = read_entry_file(path, "artifact", &reason);
  if (!artifact) return miss(reason);
  if (sha256_hex(artifact->bytes) != manifest->artifact_sha256)
    return miss("the artifact does not match the manifest's hash");
  backends::Artifact verified{std::move(path), std::move(artifact->bytes), static_cast<uint64_t>(artifact->device),
                              static_cast<uint64_t>(artifact->inode)};
  return CacheEntry{std::move(*manifest), std::move(verified)};
}

std::optional<CacheManifest> DiskCache::load_manifest(const std::string& key, std::string* why) const {
  check_key(key);
  std::string reason;
  std::optional<EntryFile> text = read_entry_file(manifest_path(key), "manifest", &reason);
  std::optional<CacheManifest> manifest = text ? parse_manifest(text->bytes) : std::nullopt;
  if (!manifest && why) {
    if (!text)
      *why = reason == "the manifest is missing" ? "no entry" : reason;
    else
      *why = "the manifest is truncated or malformed";
  }
  return manifest;
}

std::optional<Stages> DiskCache::load_stages(const std::string& key, const CacheManifest& manifest) const {
  check_key(key);
  if (manifest.stages_sha256.empty()) return std::nullopt;
  std::string reason;
  std::optional<EntryFile> text = read_entry_file(stages_path(key), "stages", &reason);
  if (!text || sha256_hex(text->bytes) != manifest.stages_sha256) return std::nullopt;
  return parse_stages(text->bytes);
}

// --- publishing --------------------------------------------------------------------

void DiskCache::store(const EntryLock& held, const std::string& built_artifact, CacheManifest& manifest,
                      const Stages* stages) const {
  const std::string& key = held.key();
  check_key(key);
  TEGULA_ASSERT(is_artifact_extension(manifest.artifact_extension),
                "malformed artifact extension '" + manifest.artifact_extension + "'");
  std::string path = artifact_path(key, manifest.artifact_extension);
  // The toolchain's umask decides the built file's mode; entries must not be
  // group- or world-writable to load (read_entry_file).
  struct stat built{};
  if (::stat(built_artifact.c_str(), &built) == 0) ::chmod(built_artifact.c_str(), built.st_mode & 0700);
  std::optional<std::string> bytes = read_file(built_artifact);
  if (!bytes) fail(ErrorKind::Value, Diag::CacheWriteFailed,
                   "cannot read the built kernel " + built_artifact + ": " + errno_text());
  manifest.artifact_sha256 = sha256_hex(*bytes);
  if (::rename(built_artifact.c_str(), path.c_str()) != 0) {
    std::string reason = errno_text();
    ::unlink(built_artifact.c_str());
    fail(ErrorKind::Value, Diag::CacheWriteFailed, "cannot write " + path + ": " + reason);
  }
  publish_rest(key, manifest, stages);
}

// The stages, then the manifest: an entry exists for readers only once
// everything it names is in place.
void DiskCache::publish_rest(const std::string& key, CacheManifest& manifest, const Stages* stages) const {
  manifest.stages_sha256.clear();
  if (stages) {
    std::string text = serialize_stages(*stages);
    write_atomically(key, stages_path(key), text);
    manifest.stages_sha256 = sha256_hex(text);
  }
  write_atomically(key, manifest_path(key), serialize_manifest(manifest));
  remove_stale_temporaries();
}

void DiskCache::store_stages(const std::string& key, CacheManifest& manifest, const Stages& stages) const {
  check_key(key);
  EntryLock held = lock(key);
  // Rewriting the manifest of an entry rebuilt in the meantime would pair the
  // old library hash with the new library: keep the new entry as it is.
  std::optional<CacheManifest> current = load_manifest(key);
  if (!current || current->artifact_sha256 != manifest.artifact_sha256) return;
  std::string text = serialize_stages(stages);
  write_atomically(key, stages_path(key), text);
  manifest.stages_sha256 = sha256_hex(text);
  write_atomically(key, manifest_path(key), serialize_manifest(manifest));
}

// A temporary file lives from its creation to its rename, seconds at most
// (the C++ compiler writes the library at the very end of a build), so one
// untouched for an hour belongs to a process that was killed in between.
// Ours are `.tmp-*`; the CPU toolchain's (sources, objects, precompiled
// headers: backends/cpu/toolchain.cpp) are `.tegula-*` in the same directory.
// Run after each build, which already costs far more than one directory scan.
void DiskCache::remove_stale_temporaries() const {
  constexpr time_t kStaleSeconds = 3600;
  DIR* listing = ::opendir(directory_.c_str());
  if (!listing) return;
  time_t now = std::time(nullptr);
  while (const dirent* item = ::readdir(listing)) {
    std::string_view name = item->d_name;
    if (!name.starts_with(".tmp-") && !name.starts_with(".tegula-")) continue;
    struct stat info{};
    if (::fstatat(::dirfd(listing), item->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(info.st_mode) || now - info.st_mtime < kStaleSeconds) continue;
    ::unlinkat(::dirfd(listing), item->d_name, 0);
  }
  ::closedir(listing);
}

}  // namespace tegula::runtime
