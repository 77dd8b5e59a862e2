// Files for the hpipe tool: checked reads and writes, and outputs that appear atomically.
#pragma once

#include <signal.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace hpipe::cli {

// A file opened for reading, once: a pipe or device (anything not a regular file) is read whole
// into memory when opened, so that its size is known and it can be read again from the start. A
// Failure names the path when it cannot be opened or read.
class InputFile {
 public:
  explicit InputFile(const std::string &path);
  // Bytes already in memory, named `path` in errors (the fuzz harnesses).
  InputFile(std::string path, std::vector<unsigned char> bytes);
  ~InputFile();
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;
  const std::string &path() const { return path_; }
  std::int64_t size() const { return size_; }
  std::size_t read(void *data, std::size_t bytes);  // bytes actually read
  void rewind();
  std::vector<unsigned char> read_all();  // the whole file, from the start
  // Whether the contents are in memory (a pipe's, or given): readers that open files by path
  // themselves (matio, libhdf5, libtiff) cannot read them.
  bool in_memory() const { return in_memory_; }

 private:
  void open_memory();
  std::string path_;
  std::vector<unsigned char> memory_;  // a pipe's or device's contents
  bool in_memory_ = false;
  FILE *file_ = nullptr;
  std::int64_t size_ = 0;
};

// A file to write: `path`, the temporary written, for `target`, the file the user asked for, which
// errors name.
struct Destination {
  std::string path, target;
};

// A file opened for writing; every write is checked, close() reports a full disk.
class OutputFile {
 public:
  // Writes `path`; errors name `target` (the file the user asked for; `path` may be its temporary).
  explicit OutputFile(const std::string &path, const std::string &target = "");
  explicit OutputFile(const Destination &d) : OutputFile(d.path, d.target) {}
  const std::string &target() const { return target_; }
  ~OutputFile();
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;
  FILE *get() { return file_; }
  void write(const void *data, std::size_t bytes);
  void close();

 private:
  std::string target_;
  FILE *file_ = nullptr;
};

// Whether two paths name the same file: one that exists, or one to be (the same path once "." and
// ".." and symbolic links are resolved).
bool same_file(const std::string &a, const std::string &b);
bool exists(const std::string &path);
bool is_directory(const std::string &path);

// Holds SIGINT, SIGTERM and SIGHUP in the calling thread for its lifetime (they wait, pending), and
// in every thread started meanwhile for good: the stop handler (OutputSet) walks the output sets,
// and must run on the thread that writes and renames them, nowhere else.
class StopSignalsHeld {
 public:
  StopSignalsHeld();
  ~StopSignalsHeld();
  StopSignalsHeld(const StopSignalsHeld &) = delete;
  StopSignalsHeld &operator=(const StopSignalsHeld &) = delete;

 private:
  sigset_t before_;
};

// The outputs of one command: each is written to a temporary file beside its target
// (.NAME.hpipe-HOST-PID.tmp) and renamed onto it only by commit(), after all were written;
// destroyed uncommitted (or stopped by a signal), it removes them and the folders it made for them.
// Temporary files that a killed hpipe of this machine left
// in the target folders (their PID no longer runs) are removed first; other machines' are kept.
class OutputSet {
 public:
  explicit OutputSet(bool force) : force_(force) {}
  OutputSet(const std::vector<std::string> &targets, const std::vector<std::string> &inputs, bool force);
  ~OutputSet();
  OutputSet(const OutputSet &) = delete;
  OutputSet &operator=(const OutputSet &) = delete;
  // Adds `targets`, checked first: none may be an input (always refused), exist unless `force`,
  // or repeat (in the set). Creates missing folders. Throws Failure/UsageError naming the file.
  // Returns the index of the first.
  std::size_t add(const std::vector<std::string> &targets, const std::vector<std::string> &inputs);
  // The checks of add() on `targets` alone, changing nothing.
  static void check(const std::vector<std::string> &targets, const std::vector<std::string> &inputs, bool force);
  const std::vector<std::string> &targets() const { return targets_; }
  // Where to write target i: its temporary file.
  Destination destination(std::size_t i) const { return {temps_[i], targets_[i]}; }
  void commit();
  // Removes the temporary files that writers of `target` killed outright (SIGKILL, a lost node)
  // left beside it; a re-run calls it before writing the target again. A writer of this machine
  // that still runs keeps its file, as does another machine's file written in the last hour.
  static void remove_leftovers(const std::string &target);

 private:
  // Every set with temporary files, for the signal handler: an interrupted command removes them
  // all (a command may hold several sets at once).
  static OutputSet *writing_;
  static void remove_and_reraise(int sig);

  bool force_;
  std::vector<std::string> targets_;
  std::vector<std::string> temps_;
  std::vector<std::string> made_folders_;  // in the order made, parents first
  bool committed_ = false;
  bool listed_ = false;  // in writing_
  OutputSet *next_ = nullptr;
};

}  // namespace hpipe::cli
