// Files for the hpipe tool: checked reads and writes, and outputs that appear atomically.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace hpipe::cli {

// A file opened for reading; a Failure names the path when it cannot be opened.
class InputFile {
 public:
  explicit InputFile(const std::string &path);
  ~InputFile();
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;
  std::int64_t size() const { return size_; }
  std::size_t read(void *data, std::size_t bytes);  // bytes actually read
  std::vector<unsigned char> read_all();

 private:
  std::string path_;
  FILE *file_ = nullptr;
  std::int64_t size_ = 0;
};

// A file opened for writing; every write is checked, close() reports a full disk.
class OutputFile {
 public:
  explicit OutputFile(const std::string &path);
  ~OutputFile();
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;
  FILE *get() { return file_; }
  void write(const void *data, std::size_t bytes);
  void close();

 private:
  std::string path_;
  FILE *file_ = nullptr;
};

// Whether two paths name the same existing file.
bool same_file(const std::string &a, const std::string &b);
bool exists(const std::string &path);
bool is_directory(const std::string &path);

// The outputs of one command: each is written to a temporary file beside its target and renamed
// onto it only by commit(), after all were written; destroyed uncommitted, it removes them.
class OutputSet {
 public:
  // Checks `targets` up front: none may be an input (always refused), exist unless `force`, or
  // repeat. Creates missing folders. Throws Failure/UsageError naming the file.
  OutputSet(std::vector<std::string> targets, const std::vector<std::string> &inputs, bool force);
  ~OutputSet();
  OutputSet(const OutputSet &) = delete;
  OutputSet &operator=(const OutputSet &) = delete;
  const std::vector<std::string> &targets() const { return targets_; }
  // The temporary path to write target i to.
  const std::string &temporary(std::size_t i) const { return temps_[i]; }
  void commit();
  // Removes the temporary files that writers of `target` killed outright (SIGKILL, a lost node)
  // left beside it; a re-run calls it before writing the target again.
  static void remove_leftovers(const std::string &target);

 private:
  std::vector<std::string> targets_;
  std::vector<std::string> temps_;
  bool committed_ = false;
};

}  // namespace hpipe::cli
