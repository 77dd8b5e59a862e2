#include "file.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "errors.h"

namespace hpipe::cli {

namespace {

std::string system_error() { return std::strerror(errno); }

std::string folder_of(const std::string &path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// The outputs being written, for the signal handler: an interrupted command removes its
// temporary files too. Set only while their names are fixed.
const OutputSet *g_writing = nullptr;

void remove_and_reraise(int sig) {
  if (g_writing)
    for (std::size_t i = 0; i < g_writing->targets().size(); i++) unlink(g_writing->temporary(i).c_str());
  signal(sig, SIG_DFL);
  raise(sig);
}

// The hidden file beside `target` that process `pid` writes it to.
std::string temporary_name(const std::string &target, const std::string &pid) {
  const std::size_t slash = target.rfind('/');
  const std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
  const std::string dir = slash == std::string::npos ? "" : target.substr(0, slash + 1);
  return dir + "." + base + ".hpipe-" + pid + ".tmp";
}

// mkdir -p
void make_folders(const std::string &dir) {
  if (dir.empty() || is_directory(dir)) return;
  make_folders(folder_of(dir));
  if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    throw Failure(dir + ": cannot create the output folder: " + system_error());
}

}  // namespace

InputFile::InputFile(const std::string &path) : path_(path) {
  if (is_directory(path)) throw Failure(path + ": is a directory, expected a file");
  file_ = std::fopen(path.c_str(), "rb");
  if (!file_) throw Failure(path + ": cannot open: " + system_error());
  struct stat st {};
  if (fstat(fileno(file_), &st) != 0) throw Failure(path + ": cannot stat: " + system_error());
  size_ = st.st_size;
}

InputFile::~InputFile() {
  if (file_) std::fclose(file_);
}

std::size_t InputFile::read(void *data, std::size_t bytes) {
  const std::size_t got = std::fread(data, 1, bytes, file_);
  if (got < bytes && std::ferror(file_)) throw Failure(path_ + ": read error: " + system_error());
  return got;
}

std::vector<unsigned char> InputFile::read_all() {
  std::vector<unsigned char> bytes(static_cast<std::size_t>(size_));
  if (read(bytes.data(), bytes.size()) != bytes.size()) throw Failure(path_ + ": file shrank while being read");
  return bytes;
}

OutputFile::OutputFile(const std::string &path) : path_(path) {
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) throw Failure(path + ": cannot create: " + system_error());
}

OutputFile::~OutputFile() {
  if (file_) std::fclose(file_);
}

void OutputFile::write(const void *data, std::size_t bytes) {
  if (bytes && std::fwrite(data, 1, bytes, file_) != bytes) throw Failure(path_ + ": write error: " + system_error());
}

void OutputFile::close() {
  FILE *f = file_;
  file_ = nullptr;
  if (std::fflush(f) != 0 || std::ferror(f)) {
    const std::string why = system_error();
    std::fclose(f);
    throw Failure(path_ + ": write error: " + why);
  }
  if (std::fclose(f) != 0) throw Failure(path_ + ": write error: " + system_error());
}

bool same_file(const std::string &a, const std::string &b) {
  struct stat sa {}, sb {};
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

bool exists(const std::string &path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

bool is_directory(const std::string &path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

OutputSet::OutputSet(std::vector<std::string> targets, const std::vector<std::string> &inputs, bool force)
    : targets_(std::move(targets)) {
  std::set<std::string> seen;
  for (const std::string &t : targets_) {
    if (!seen.insert(t).second) throw UsageError(t + ": the output names this file twice");
    for (const std::string &in : inputs)
      if (t == in || same_file(t, in)) throw UsageError(t + ": refusing to overwrite an input file");
    if (is_directory(t)) throw UsageError(t + ": is a directory; expected an output file name");
    if (exists(t) && !force) throw UsageError(t + ": exists; use --force to overwrite it");
  }
  for (const std::string &t : targets_) make_folders(folder_of(t));
  for (const std::string &t : targets_) temps_.push_back(temporary_name(t, std::to_string(getpid())));
  g_writing = this;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    sigaction(sig, nullptr, &old);
    if (old.sa_handler != SIG_IGN) signal(sig, remove_and_reraise);
  }
}

OutputSet::~OutputSet() {
  g_writing = nullptr;
  if (!committed_)
    for (const std::string &t : temps_) std::remove(t.c_str());
}

void OutputSet::remove_leftovers(const std::string &target) {
  // Read the folder rather than glob: its name may hold glob characters.
  const std::string pattern = temporary_name(target, "*");
  const std::size_t star = pattern.rfind('*'), slash = pattern.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : pattern.substr(0, slash);
  const std::size_t name = slash + 1;  // 0 without a slash
  const std::string head = pattern.substr(name, star - name);
  const std::string tail = pattern.substr(star + 1);
  DIR *d = opendir(dir.c_str());
  if (!d) return;
  while (const dirent *e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() > head.size() + tail.size() && n.compare(0, head.size(), head) == 0 &&
        n.compare(n.size() - tail.size(), tail.size(), tail) == 0)
      std::remove((dir + "/" + n).c_str());
  }
  closedir(d);
}

void OutputSet::commit() {
  for (std::size_t i = 0; i < targets_.size(); i++)
    if (std::rename(temps_[i].c_str(), targets_[i].c_str()) != 0)
      throw Failure(targets_[i] + ": cannot rename the finished file onto it: " + system_error());
  committed_ = true;
}

}  // namespace hpipe::cli
