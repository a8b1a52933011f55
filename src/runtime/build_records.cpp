#include "runtime/build_records.h"

#include "support/diagnostic.h"
#include "support/sha256.h"

namespace tegula::runtime {

namespace {

constexpr std::string_view kMagic = "tegula-build-record 1";

std::optional<BuildRecord> read_record(const DiskCache& cache, const std::string& path, std::string* why) {
  std::string reason;
  std::optional<std::string> text = cache.read_private_file(path, "build record", &reason);
  if (!text) {
    *why = reason == "the build record is missing" ? "no record" : reason;
    return std::nullopt;
  }
  std::optional<BuildRecord> record = parse_build_record(*text);
  if (!record) *why = "the build record is truncated or malformed";
  return record;
}

}  // namespace

std::string serialize_build_record(const BuildRecord& record) {
  return std::string(kMagic) + "\nentry " + record.key + " " + record.extension + " " + record.sha256 + "\nend\n";
}

std::optional<BuildRecord> parse_build_record(std::string_view text) {
  const std::string start = std::string(kMagic) + "\nentry ";
  constexpr std::string_view kEnd = "\nend\n";
  if (!text.starts_with(start) || !text.ends_with(kEnd) || text.size() < start.size() + kEnd.size())
    return std::nullopt;
  // One line of exactly three fields, as the writer makes it: they become a
  // file name and a hash to compare.
  std::string_view line = text.substr(start.size(), text.size() - start.size() - kEnd.size());
  size_t first = line.find(' '), second = first == std::string_view::npos ? first : line.find(' ', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  BuildRecord record{std::string(line.substr(0, first)), std::string(line.substr(first + 1, second - first - 1)),
                     std::string(line.substr(second + 1))};
  if (!is_hex_digest(record.key) || !is_artifact_extension(record.extension) || !is_hex_digest(record.sha256))
    return std::nullopt;
  return record;
}

std::string BuildRecords::record_path(const std::string& inputs) const {
  TEGULA_ASSERT(is_hex_digest(inputs), "malformed build inputs hash '" + inputs + "'");
  return cache_.directory() + "/" + inputs + ".build";
}

std::optional<std::string> BuildRecords::find(const std::string& inputs, std::string* why) const {
  std::string reason;
  auto miss = [&](std::string text) -> std::optional<std::string> {
    if (why) *why = std::move(text);
    return std::nullopt;
  };
  std::optional<BuildRecord> record = read_record(cache_, record_path(inputs), &reason);
  if (!record) return miss(reason);
  std::optional<std::string> bytes =
      cache_.read_private_file(cache_.artifact_path(record->key, record->extension), "recorded artifact", &reason);
  if (!bytes) return miss(reason);
  if (sha256_hex(*bytes) != record->sha256) return miss("the recorded artifact was rebuilt or altered");
  return bytes;
}

void BuildRecords::record(const std::string& inputs, const BuildRecord& record) const {
  TEGULA_ASSERT(is_hex_digest(record.key) && is_artifact_extension(record.extension) && is_hex_digest(record.sha256),
                "malformed build record");
  cache_.write_atomically(inputs, record_path(inputs), serialize_build_record(record));
}

}  // namespace tegula::runtime
