#include "backends/artifact.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "support/error.h"

namespace tegula::backends {

bool Artifact::still_at_path() const {
  struct stat now{};
  return ::stat(path.c_str(), &now) == 0 && static_cast<uint64_t>(now.st_dev) == device &&
         static_cast<uint64_t>(now.st_ino) == inode;
}

void write_new_file(const std::string& path, std::string_view bytes) {
  auto refuse = [&](int error) {
    fail(ErrorKind::Value, Diag::CacheWriteFailed, "cannot write " + path + ": " + std::strerror(error));
  };
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) refuse(errno);
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      ::close(fd);
      ::unlink(path.c_str());
      refuse(error);
    }
    written += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    int error = errno;
    ::unlink(path.c_str());
    refuse(error);
  }
}

}  // namespace tegula::backends
