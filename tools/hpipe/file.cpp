#include "file.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <set>

#include "errors.h"

namespace hpipe::cli {

namespace {

std::string system_error() { return std::strerror(errno); }

std::string folder_of(const std::string &path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// mkdir -p, adding the folders it made to `made` (parents first).
void make_folders(const std::string &dir, std::vector<std::string> &made) {
  if (dir.empty() || is_directory(dir)) return;
  make_folders(folder_of(dir), made);
  if (mkdir(dir.c_str(), 0777) == 0) {
    made.push_back(dir);
  } else if (errno != EEXIST) {
    throw Failure(dir + ": cannot create the output folder: " + system_error());
  }
}

const char kTempTag[] = ".hpipe-";  // a temporary file is .NAME.hpipe-HOST-PID.tmp
const char kTempEnd[] = ".tmp";

// This machine's name as it goes into temporary file names: letters, digits, '-' and '.', at most
// 64 of them (others become '_').
const std::string &host_name() {
  static const std::string name = [] {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return std::string("localhost");
    std::string n(buf, std::min<std::size_t>(std::strlen(buf), 64));
    for (char &c : n)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
    return n;
  }();
  return name;
}

// The hidden file beside `target` that process `pid` of this machine writes it to.
std::string temporary_name(const std::string &target, pid_t pid) {
  const std::size_t slash = target.rfind('/');
  const std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
  const std::string dir = slash == std::string::npos ? "" : target.substr(0, slash + 1);
  return dir + "." + base + kTempTag + host_name() + "-" + std::to_string(pid) + kTempEnd;
}

// Who wrote a temporary file: the host and PID in its name, and the target's name.
struct TemporaryOwner {
  std::string base, host;
  pid_t pid = 0;  // 0: the name is not a temporary file's
};

TemporaryOwner temporary_owner(const std::string &name) {
  TemporaryOwner owner;
  const std::size_t end = name.size() - std::min(name.size(), sizeof kTempEnd - 1);
  const std::size_t tag = name.rfind(kTempTag);
  if (name[0] != '.' || tag == std::string::npos || name.compare(end, std::string::npos, kTempEnd) != 0) return owner;
  const std::size_t dash = name.rfind('-', end);
  const std::size_t host = tag + sizeof kTempTag - 1;
  if (dash == std::string::npos || dash <= host || dash + 1 >= end || dash + 10 < end) return owner;
  pid_t pid = 0;
  for (std::size_t i = dash + 1; i < end; i++) {
    if (name[i] < '0' || name[i] > '9') return owner;
    pid = pid * 10 + (name[i] - '0');
  }
  owner.base = name.substr(1, tag - 1);
  owner.host = name.substr(host, dash - host);
  owner.pid = pid;
  return owner;
}

// Removes the temporary files (.NAME.hpipe-HOST-PID.tmp) in folder `dir` whose owner is stale.
template <class Stale>
void remove_temporaries(const std::string &dir, Stale stale) {
  std::unique_ptr<DIR, int (*)(DIR *)> d(opendir(dir.c_str()), &closedir);
  if (!d) return;
  while (const dirent *e = readdir(d.get())) {
    const TemporaryOwner owner = temporary_owner(e->d_name);
    const std::string path = dir + "/" + e->d_name;
    if (owner.pid > 0 && stale(owner, path)) unlink(path.c_str());
  }
}

// Whether this machine's hpipe that writes a temporary file no longer runs (killed with SIGKILL,
// or crashed). Other machines' files are never judged so: a folder shared by cluster nodes holds
// their writes in progress, whose PIDs mean nothing here.
bool writer_is_dead(const TemporaryOwner &o) {
  return o.host == host_name() && o.pid != getpid() && kill(o.pid, 0) != 0 && errno == ESRCH;
}

// Removes the temporary files in `dir` whose writer is dead.
void remove_stale_temporaries(const std::string &dir) {
  remove_temporaries(dir, [](const TemporaryOwner &o, const std::string &) { return writer_is_dead(o); });
}

// A file a writer holds only while it writes, unchanged for an hour: its writer is gone (a lost
// node), wherever it ran.
bool untouched_for_an_hour(const std::string &path) {
  struct stat s {};
  return stat(path.c_str(), &s) == 0 && std::time(nullptr) - s.st_mtime > 3600;
}

}  // namespace

StopSignalsHeld::StopSignalsHeld() {
  sigset_t stop;
  sigemptyset(&stop);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop, sig);
  pthread_sigmask(SIG_BLOCK, &stop, &before_);
}

StopSignalsHeld::~StopSignalsHeld() { pthread_sigmask(SIG_SETMASK, &before_, nullptr); }

InputFile::InputFile(const std::string &path) : path_(path) {
  if (is_directory(path)) throw Failure(path + ": is a directory, expected a file");
  file_ = std::fopen(path.c_str(), "rb");
  if (!file_) throw Failure(path + ": cannot open: " + system_error());
  struct stat st {};
  if (fstat(fileno(file_), &st) != 0) throw Failure(path + ": cannot stat: " + system_error());
  if (S_ISREG(st.st_mode)) {
    size_ = st.st_size;
    return;
  }
  // A pipe can be read only once, and says nothing of its size: keep what it holds, up to the
  // machine's memory (which /dev/zero, say, would otherwise exhaust).
  const std::int64_t limit = std::int64_t(sysconf(_SC_PHYS_PAGES)) * std::int64_t(sysconf(_SC_PAGESIZE));
  unsigned char chunk[1 << 16];
  while (const std::size_t got = read(chunk, sizeof chunk)) {
    if (std::int64_t(memory_.size() + got) > limit)
      throw Failure(path + ": holds more than this machine's " + std::to_string(limit >> 20) + " MiB of memory");
    memory_.insert(memory_.end(), chunk, chunk + got);
  }
  std::fclose(file_);
  file_ = nullptr;
  open_memory();
}

InputFile::InputFile(std::string path, std::vector<unsigned char> bytes)
    : path_(std::move(path)), memory_(std::move(bytes)) {
  open_memory();
}

void InputFile::open_memory() {
  in_memory_ = true;
  size_ = static_cast<std::int64_t>(memory_.size());
  if (memory_.empty()) return;  // nothing to read; read() returns 0
  file_ = fmemopen(memory_.data(), memory_.size(), "rb");
  if (!file_) throw Failure(path_ + ": cannot read: " + system_error());
}

InputFile::~InputFile() {
  if (file_) std::fclose(file_);
}

std::size_t InputFile::read(void *data, std::size_t bytes) {
  if (!file_ || bytes == 0) return 0;
  const std::size_t got = std::fread(data, 1, bytes, file_);
  if (got < bytes && std::ferror(file_)) throw Failure(path_ + ": read error: " + system_error());
  return got;
}

void InputFile::rewind() {
  if (file_ && std::fseek(file_, 0, SEEK_SET) != 0) throw Failure(path_ + ": cannot seek: " + system_error());
}

std::vector<unsigned char> InputFile::read_all() {
  rewind();
  std::vector<unsigned char> bytes(static_cast<std::size_t>(size_));
  if (read(bytes.data(), bytes.size()) != bytes.size()) throw Failure(path_ + ": file shrank while being read");
  return bytes;
}

OutputFile::OutputFile(const std::string &path, const std::string &target) : target_(target.empty() ? path : target) {
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) throw Failure(target_ + ": cannot create: " + system_error());
}

OutputFile::~OutputFile() {
  if (file_) std::fclose(file_);
}

void OutputFile::write(const void *data, std::size_t bytes) {
  if (bytes && std::fwrite(data, 1, bytes, file_) != bytes) throw Failure(target_ + ": write error: " + system_error());
}

void OutputFile::close() {
  FILE *f = file_;
  file_ = nullptr;
  if (std::fflush(f) != 0 || std::ferror(f)) {
    const std::string why = system_error();
    std::fclose(f);
    throw Failure(target_ + ": write error: " + why);
  }
  if (std::fclose(f) != 0) throw Failure(target_ + ": write error: " + system_error());
}

bool same_file(const std::string &a, const std::string &b) {
  struct stat sa {
  }, sb{};
  if (stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  namespace fs = std::filesystem;
  std::error_code ignored;
  return fs::weakly_canonical(fs::absolute(a, ignored), ignored) ==
         fs::weakly_canonical(fs::absolute(b, ignored), ignored);
}

// An output's folder as the file system resolves it (folders not yet made resolved by name), and
// its name: two spellings of one output give one key. The name itself is not resolved: rename()
// replaces a symbolic link there, not the file it points to.
std::string output_key(const std::string &path) {
  namespace fs = std::filesystem;
  std::error_code ignored;
  const fs::path p = fs::absolute(path, ignored).lexically_normal();
  return (fs::weakly_canonical(p.parent_path(), ignored) / p.filename()).string();
}

bool exists(const std::string &path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

bool is_directory(const std::string &path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

OutputSet::OutputSet(const std::vector<std::string> &targets, const std::vector<std::string> &inputs, bool force)
    : force_(force) {
  add(targets, inputs);
}

void OutputSet::check(const std::vector<std::string> &targets, const std::vector<std::string> &inputs, bool force) {
  std::set<std::string> seen;
  for (const std::string &t : targets) {
    if (!seen.insert(output_key(t)).second) throw UsageError(t + ": the output names this file twice");
    for (const std::string &in : inputs)
      if (t == in || same_file(t, in)) throw UsageError(t + ": refusing to overwrite an input file");
    if (is_directory(t)) throw UsageError(t + ": is a directory; expected an output file name");
    if (exists(t) && !force) throw UsageError(t + ": exists; use --force to overwrite it");
  }
}

std::size_t OutputSet::add(const std::vector<std::string> &targets, const std::vector<std::string> &inputs) {
  for (const std::string &t : targets)
    for (const std::string &earlier : targets_)
      if (output_key(t) == output_key(earlier)) throw UsageError(t + ": the output names this file twice");
  check(targets, inputs, force_);
  std::set<std::string> folders;
  for (const std::string &t : targets) folders.insert(folder_of(t));
  for (const std::string &f : folders) {
    std::vector<std::string> made;
    make_folders(f, made);
    {
      const StopSignalsHeld held;  // the signal handler reads the list
      made_folders_.insert(made_folders_.end(), made.begin(), made.end());
    }
    remove_stale_temporaries(f);
  }
  const std::size_t first = targets_.size();
  {
    const StopSignalsHeld held;  // the signal handler reads the names: none arrives while they grow
    for (const std::string &t : targets) {
      targets_.push_back(t);
      temps_.push_back(temporary_name(t, getpid()));
    }
    if (!listed_) {
      next_ = writing_;
      writing_ = this;
      listed_ = true;
    }
  }
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    sigaction(sig, nullptr, &old);
    if (old.sa_handler != SIG_IGN) signal(sig, remove_and_reraise);
  }
  return first;
}

OutputSet::~OutputSet() {
  {
    const StopSignalsHeld held;
    for (OutputSet **s = &writing_; *s; s = &(*s)->next_)
      if (*s == this) {
        *s = next_;
        break;
      }
  }
  if (!committed_) {
    for (const std::string &t : temps_) std::remove(t.c_str());
    for (auto f = made_folders_.rbegin(); f != made_folders_.rend(); ++f) rmdir(f->c_str());  // if empty
  }
}

OutputSet *OutputSet::writing_ = nullptr;

void OutputSet::remove_and_reraise(int sig) {
  for (const OutputSet *s = writing_; s; s = s->next_)
    if (!s->committed_) {
      for (const std::string &t : s->temps_) unlink(t.c_str());
      for (auto f = s->made_folders_.rbegin(); f != s->made_folders_.rend(); ++f) rmdir(f->c_str());
    }
  signal(sig, SIG_DFL);
  raise(sig);
}

void OutputSet::remove_leftovers(const std::string &target) {
  const std::string base = target.substr(target.rfind('/') + 1);  // npos + 1 == 0
  // Only gone writers' files: another run may be writing the target now (two batches on one
  // folder, or a batch's item still running on a Dask worker), and its file is its own.
  remove_temporaries(folder_of(target), [&](const TemporaryOwner &o, const std::string &path) {
    return o.base == base && (writer_is_dead(o) || (o.host != host_name() && untouched_for_an_hour(path)));
  });
}

// A stop signal waits until every file is in place (one arriving between renames left some
// outputs written and others not). A failed rename takes back the files before it that were new;
// those that replaced a file (--force) stay, the old one being gone.
void OutputSet::commit() {
  const StopSignalsHeld held;
  std::vector<bool> replaces(targets_.size());
  for (std::size_t i = 0; i < targets_.size(); i++) replaces[i] = exists(targets_[i]);
  for (std::size_t i = 0; i < targets_.size(); i++)
    if (std::rename(temps_[i].c_str(), targets_[i].c_str()) != 0) {
      const std::string why = system_error();
      for (std::size_t j = 0; j < i; j++)
        if (!replaces[j]) std::remove(targets_[j].c_str());
      throw Failure(targets_[i] + ": cannot rename the finished file onto it: " + why);
    }
  committed_ = true;
}

}  // namespace hpipe::cli
