#include "call.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "block_cache.h"
#include "cuda_support.h"
#include "environment.h"

namespace hpipe::detail {

namespace {

// One row of `count` elements of T, any strides (a stride-0 source fills the row).
template <class T>
void copy_row(const std::uint8_t *source, std::int64_t source_stride, std::uint8_t *target, std::int64_t target_stride,
              std::int64_t count) {
  if (source_stride == 1 && target_stride == 1) {
    std::memcpy(target, source, static_cast<std::size_t>(count) * sizeof(T));
    return;
  }
  T value;
  for (std::int64_t x = 0; x < count; x++) {
    std::memcpy(&value, source + x * source_stride * std::int64_t(sizeof(T)), sizeof(T));
    std::memcpy(target + x * target_stride * std::int64_t(sizeof(T)), &value, sizeof(T));
  }
}

// Copies every element of `from` into `to` (host buffers of one type and extents, any strides),
// row by row, each row a typed loop (an expanded gradient, all strides 0, is a common input).
// Not Halide 14's Buffer::copy_from: when it merges dimensions it advances a pointer by an
// uninitialised stride (for_each_value_prep), which UBSan reports, now and then, as an overflow.
void copy_elements(const halide_buffer_t &from, const halide_buffer_t &to) {
  const int rank = from.dimensions;
  const std::int64_t bytes = from.type.bytes();
  if (rank == 0) {
    std::memcpy(to.host, from.host, static_cast<std::size_t>(bytes));
    return;
  }
  for (int d = 0; d < rank; d++)
    if (from.dim[d].extent <= 0) return;
  const auto row = bytes == 8   ? copy_row<std::uint64_t>
                   : bytes == 4 ? copy_row<std::uint32_t>
                   : bytes == 2 ? copy_row<std::uint16_t>
                                : copy_row<std::uint8_t>;
  std::vector<std::int64_t> index(static_cast<std::size_t>(rank), 0);  // the outer dimensions' (index[0] unused)
  while (true) {
    const std::uint8_t *source = from.host;
    std::uint8_t *target = to.host;
    for (int d = 1; d < rank; d++) {
      source += index[d] * from.dim[d].stride * bytes;
      target += index[d] * to.dim[d].stride * bytes;
    }
    row(source, from.dim[0].stride, target, to.dim[0].stride, from.dim[0].extent);
    int d = 1;
    for (; d < rank; d++) {
      if (++index[d] < from.dim[d].extent) break;
      index[d] = 0;
    }
    if (d == rank) return;
  }
}

thread_local std::string stray_error;  // a Halide error raised without our user_context

extern "C" void collect_halide_error(void *user_context, const char *message) {
  std::string &sink = user_context ? static_cast<CallContext *>(user_context)->error : stray_error;
  if (!sink.empty()) sink += "; ";
  sink += message;
  while (!sink.empty() && (sink.back() == '\n' || sink.back() == ' ')) sink.pop_back();
}

void install_error_handler() {
  static std::once_flag once;
  std::call_once(once, [] { halide_set_error_handler(collect_halide_error); });
}

constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

bool has_no_elements(int rank, const std::int64_t *shape) { return std::find(shape, shape + rank, 0) != shape + rank; }
// The stride a kernel buffer takes for a dimension: that of a dimension of extent 1 is never used
// (any value is taken, as NumPy does), and 1 keeps an innermost one dense.
std::int64_t used_stride(std::int64_t extent, std::int64_t stride) { return extent == 1 ? 1 : stride; }

}  // namespace

void fail(std::string_view op, std::string_view arg, const std::string &message) {
  throw Error("hpipe::" + std::string(op) + ": " + std::string(arg) + ": " + message);
}

Footprint footprint(const void *data, int element_bytes, int rank, const std::int64_t *shape,
                    const std::int64_t *strides, Memory memory) {
  if (has_no_elements(rank, shape)) return {0, 0, memory};
  // In 128 bits: any int64 extents and strides, without overflow.
  __int128 lo = 0, hi = 0;
  for (int d = 0; d < rank; d++) {
    const __int128 span = __int128(shape[d] - 1) * strides[d];
    lo += std::min<__int128>(0, span);
    hi += std::max<__int128>(0, span);
  }
  const __int128 base = reinterpret_cast<std::uintptr_t>(data), top = std::numeric_limits<std::uintptr_t>::max();
  const auto clamp = [&](__int128 v) { return static_cast<std::uintptr_t>(std::clamp<__int128>(v, 0, top)); };
  std::uintptr_t period = 0;
  for (int d = 0; d < rank; d++) {
    if (shape[d] <= 1) continue;
    const unsigned __int128 step = static_cast<unsigned __int128>(strides[d] < 0 ? -__int128(strides[d]) : strides[d]) *
                                   static_cast<unsigned>(element_bytes);
    // A step past the address space tells nothing: a period of 1 byte claims no interleaving.
    period = std::gcd(period, step > top ? std::uintptr_t(1) : static_cast<std::uintptr_t>(step));
  }
  return {clamp(base + lo * element_bytes), clamp(base + (hi + 1) * element_bytes), memory, period,
          std::uintptr_t(element_bytes)};
}

void check_extents(std::string_view op, std::string_view name, int rank, const std::int64_t *shape) {
  for (int d = 0; d < rank; d++)
    if (shape[d] < 0)
      fail(op, name,
           "every dimension must be at least 0, got shape " +
               shape_string(std::vector<std::int64_t>(shape, shape + rank)));
}

void check_output_layout(std::string_view op, std::string_view name, int rank, const std::int64_t *shape,
                         const std::int64_t *strides) {
  if (has_no_elements(rank, shape)) return;                    // no elements to share memory
  std::array<std::pair<std::uint64_t, std::int64_t>, 8> dims;  // (|stride|, extent) of extents > 1
  int count = 0;
  for (int d = 0; d < rank && count < int(dims.size()); d++)
    if (shape[d] > 1)
      dims[count++] = {strides[d] < 0 ? 0 - std::uint64_t(strides[d]) : std::uint64_t(strides[d]), shape[d]};
  std::sort(dims.begin(), dims.begin() + count);
  unsigned __int128 span = 0;  // the farthest element the smaller strides reach
  for (int i = 0; i < count; i++) {
    if (dims[i].first <= span)
      fail(op, name,
           "its elements may share memory (shape " + shape_string(std::vector<std::int64_t>(shape, shape + rank)) +
               ", strides " + shape_string(std::vector<std::int64_t>(strides, strides + rank)) +
               "): an output needs each stride, smallest first, to step past the span of the smaller ones (a "
               "stride of 0 never does)");
    span += (unsigned __int128)(dims[i].second - 1) * dims[i].first;
  }
}

void fail_overlap(std::string_view op, std::string_view out_name, bool other_is_output, std::string_view other_name) {
  fail(op, out_name,
       std::string("overlaps ") + (other_is_output ? "output " : "input ") + std::string(other_name) +
           "; outputs must not share memory with other arguments");
}

Call::Call(const char *op, const Options &options) : op_(op), options_(options) {
  if (const Environment &e = environment(); !e.problem.empty()) fail(e.bad_variable, e.problem);
  install_error_handler();
  install_block_cache();
  context_.cuda_stream = options.cuda_stream;
}

Call::~Call() {
  for (auto &b : buffers_) {
    if (b.released || !b.on_device) continue;
    release_device(&context_, b.kernel_buffer(), b.memory == Memory::cuda);
    b.released = true;
  }
}

void Call::fail(std::string_view name, const std::string &message) const { detail::fail(op_, name, message); }

void check_kernel_buffer(std::string_view op, std::string_view name, int rank, const std::int64_t *shape,
                         int element_bytes) {
  check_extents(op, name, rank, shape);
  std::int64_t elements = 1;
  for (int d = 0; d < rank; d++) {
    if (shape[d] > kInt32Max)
      fail(op, name,
           "dimension " + std::to_string(d) + " exceeds 2^31 elements in extent or stride, got shape " +
               shape_string(std::vector<std::int64_t>(shape, shape + rank)));
    elements = std::min(elements * shape[d], kInt32Max + 1);  // both <= 2^31: no overflow
  }
  if (elements * element_bytes > kMostKernelBufferBytes)
    fail(op, name,
         "spans more than 2 GiB; split the work into smaller calls (shape " +
             shape_string(std::vector<std::int64_t>(shape, shape + rank)) + ")");
}

Call::Arg Call::add(const char *name, bool is_output, halide_type_t type, void *data, int rank,
                    const std::int64_t *shape, const std::int64_t *strides, Memory memory) {
  check_kernel_buffer(op_, name, rank, shape, type.bytes());
  if (buffers_.count == kMostBuffers) fail(name, "more than " + std::to_string(kMostBuffers) + " kernel arguments");
  Buffer &b = buffers_.items[buffers_.count];
  b.name = name;
  b.is_output = is_output;
  b.memory = memory;
  b.type = type;
  b.data = static_cast<char *>(data);
  b.rank = rank;
  b.empty = has_no_elements(rank, shape);
  for (int i = 0; i < rank; i++) {
    const int d = rank - 1 - i;  // NumPy dimension d is Halide dimension i
    const std::int64_t stride = used_stride(shape[d], strides[d]);
    if (stride > kInt32Max || stride < -kInt32Max)
      fail(name, "dimension " + std::to_string(d) + " exceeds 2^31 elements in extent or stride");
    b.dims[i] = {0, static_cast<std::int32_t>(shape[d]), static_cast<std::int32_t>(stride), 0};
  }
  if (data == nullptr && !b.empty) fail(name, "data pointer is null");  // an empty torch.Tensor's may be
  if (is_output) check_output_layout(op_, name, rank, shape, strides);
  b.bytes = footprint(data, type.bytes(), rank, shape, strides, memory);
  if (b.bytes.last - b.bytes.first > std::uintptr_t(kMostKernelBufferBytes))
    fail(name, "spans more than 2 GiB; split the work into smaller calls");
  return Arg{buffers_.count++};
}

void Call::set_same_as(Arg output, Arg input) {
  Buffer &out = buffers_.items[output.index];
  const Buffer &in = buffers_.items[input.index];
  const auto same_dims = [&] {
    for (int i = 0; i < out.rank; i++)
      if (out.dims[i].extent != in.dims[i].extent ||
          (out.dims[i].extent > 1 && out.dims[i].stride != in.dims[i].stride))
        return false;
    return true;
  };
  if (in.is_output || out.data != in.data || out.memory != in.memory || out.rank != in.rank || !same_dims())
    throw std::logic_error(std::string("hpipe::") + op_ + ": output_over a different view");
  out.same_as = input.index;
}

bool Call::uses_cuda() {
  select_backend();
  return backend_ == Backend::cuda;
}

void Call::select_backend() {
  const Buffer *on_cuda = nullptr;
  for (const auto &b : buffers_)
    if (b.memory == Memory::cuda && !on_cuda) on_cuda = &b;
  switch (options_.device) {
    case Device::cpu:
      if (on_cuda) fail(on_cuda->name, "is in CUDA memory but the device is cpu");
      backend_ = Backend::cpu;
      break;
    case Device::cuda:
    case Device::automatic:
      if (options_.device == Device::cuda || on_cuda || cuda_available()) {
        if (!cuda_available())
          fail(on_cuda ? on_cuda->name : "device", std::string(on_cuda ? "is in CUDA memory" : "CUDA was requested") +
                                                       " but CUDA is not usable: " + cuda_unavailable_reason());
        backend_ = Backend::cuda;
      } else {
        backend_ = Backend::cpu;
      }
      break;
    default:
      fail("device", "expected Device::cpu, Device::cuda or Device::automatic, got Device(" +
                         std::to_string(static_cast<int>(options_.device)) + ")");
  }
}

bool Call::nothing_to_compute() {
  const Buffer *empty = nullptr, *output_with_elements = nullptr;
  for (const auto &b : buffers_) {
    if (b.empty && !empty) empty = &b;
    if (!b.empty && b.is_output && !output_with_elements) output_with_elements = &b;
  }
  if (!empty) return false;
  select_backend();
  if (!output_with_elements) return true;
  const auto shape = [](const Buffer &b) {
    std::vector<std::int64_t> extents;
    for (int i = b.rank - 1; i >= 0; i--) extents.push_back(b.dims[i].extent);
    return shape_string(extents);
  };
  fail(empty->name, "has no elements (shape " + shape(*empty) + "), but output " + output_with_elements->name +
                        " has (shape " + shape(*output_with_elements) + ")");
}

void Call::run_nothing() {
  if (!nothing_to_compute()) throw std::logic_error(std::string("hpipe::") + op_ + ": run_nothing with outputs");
}

namespace {

void fill_elements(halide_buffer_t &buffer, double value) {
  if (buffer.type == halide_type_of<float>()) {
    Halide::Runtime::Buffer<float>(buffer).fill(static_cast<float>(value));
  } else if (buffer.type == halide_type_of<double>()) {
    Halide::Runtime::Buffer<double>(buffer).fill(value);
  } else {
    throw std::logic_error("hpipe: fill_elements takes float or double buffers");
  }
}

}  // namespace

void Call::run_filled(double identity) {
  prepare();
  int status = 0;
  for (auto &b : buffers_) {
    if (!b.is_output || b.empty) continue;
    halide_buffer_t *buffer = b.kernel_buffer();
    if (b.memory == Memory::host) {
      fill_elements(*buffer, identity);  // finish() copies a dense copy back
      b.on_device = false;               // nothing of it is on a device
      continue;
    }
    // The caller's CUDA memory: the values staged in host memory laid out as the view, over its
    // footprint (Halide's copy moves only the view's elements), then copied up on the call's stream.
    std::vector<unsigned char> staging(b.bytes.last - b.bytes.first);
    buffer->host = staging.data() + (reinterpret_cast<std::uintptr_t>(b.data) - b.bytes.first);
    fill_elements(*buffer, identity);
    buffer->set_host_dirty(true);
    status = copy_to_device(&context_, buffer);
    buffer->set_host_dirty(false);
    buffer->host = nullptr;
    if (status) break;
  }
  finish(status);
}

void Call::check_views() {
  select_backend();
  check_in_place();
}

void Call::check_in_place() const {
  for (const auto &b : buffers_)
    if (b.memory == Memory::cuda && !b.empty && b.rank > 0 && b.dims[0].stride != 1)
      fail(b.name, "a view in CUDA memory needs an innermost stride of 1");
}

void Call::prepare() {
  select_backend();
  check_in_place();

  // Outputs must not overlap any other argument in the same memory space, but for the input an
  // output_over is the view of.
  for (const auto &out : buffers_) {
    if (!out.is_output) continue;
    for (const auto &other : buffers_) {
      const bool same = out.same_as >= 0 && &other == &buffers_.items[out.same_as];
      if (&other != &out && !same && out.bytes.overlaps(other.bytes))
        fail_overlap(op_, out.name, other.is_output, other.name);
    }
  }

  // Halide buffers (an empty view is never a kernel's: only run_filled() gets this far with one).
  for (auto &b : buffers_) {
    if (b.empty) continue;
    const int rank = b.rank;
    if (b.memory == Memory::cuda) {
      b.caller = Halide::Runtime::Buffer<void>(b.type, nullptr, rank, b.dims.data());
      wrap_device_pointer(&context_, b.caller.raw_buffer(), b.data);
      b.on_device = true;
      continue;
    }
    b.caller = Halide::Runtime::Buffer<void>(b.type, b.data, rank, b.dims.data());
    if (b.dims[0].stride != 1) {
      // Kernels read rows with dense vector loads: give them a dense copy.
      std::vector<int> sizes;
      for (int d = 0; d < rank; d++) sizes.push_back(b.dims[d].extent);
      b.dense = Halide::Runtime::Buffer<void>(b.type, sizes);
      if (!b.is_output) copy_elements(*b.caller.raw_buffer(), *b.dense.raw_buffer());
    }
    if (backend_ == Backend::cuda) {
      b.on_device = true;
      if (!b.is_output) b.kernel_buffer()->set_host_dirty(true);
    }
  }
}

namespace {

// The size of the last-level cache that the first CPU shares, from sysfs ("32768K"), or 0. Not
// sysconf(_SC_LEVEL3_CACHE_SIZE): on a Zen 5 VM that gave the whole socket's 384 MiB of L3, where
// a core reaches its own 32 MiB.
std::int64_t last_level_cache_bytes() {
  auto read = [](const std::string &path, const char *format, auto *...values) {
    std::FILE *f = std::fopen(path.c_str(), "r");
    const int got = f ? std::fscanf(f, format, values...) : 0;
    if (f) std::fclose(f);
    return got;
  };
  std::int64_t bytes = 0;
  for (int level = 0, index = 0; index < 8; index++) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    int this_level = 0;
    long long size = 0;
    char unit = 0;
    if (read(dir + "level", "%d", &this_level) != 1 || read(dir + "size", "%lld%c", &size, &unit) < 1) break;
    const std::int64_t scaled = unit == 'K' ? size << 10 : unit == 'M' ? size << 20 : size;
    if (this_level >= level) level = this_level, bytes = scaled;
  }
  return bytes;
}

// Output bytes from which kernels stream their outputs: HPIPE_STREAMING_BYTES at start-up (0: every
// aligned output, as the tests run them), else the last-level cache's size (32 MiB where the
// system does not say). On the Zen 5 VM (32 MiB L3), 2026-11-27: exp float32 of 10^8 and the W4
// cube outputs about 1.3x faster streamed, a 7.3 MB cube left in L3 2x slower
// (docs/performance-notes.md).
std::int64_t streaming_threshold_bytes() {
  static const std::int64_t bytes = [] {
    if (const auto b = environment().streaming_bytes) return *b;
    const std::int64_t cache = last_level_cache_bytes();
    return cache > 0 ? cache : std::int64_t(32) << 20;
  }();
  return bytes;
}

}  // namespace

std::int64_t batch_part_bytes() {
  static const std::int64_t bytes = [] {
    return std::min(environment().batch_part_bytes.value_or(kMostKernelBufferBytes), kMostKernelBufferBytes);
  }();
  return bytes;
}

bool Call::outputs_worth_streaming() const {
  std::int64_t bytes = 0;
  for (const auto &b : buffers_) {
    if (!b.is_output) continue;
    if (b.memory != Memory::host || b.dense.data() || reinterpret_cast<std::uintptr_t>(b.data) % 64 != 0) return false;
    for (int d = 1; d < b.rank; d++)
      if (b.dims[d].stride * std::int64_t(b.type.bytes()) % 64 != 0) return false;
    bytes += b.caller.size_in_bytes();
  }
  return bytes > 0 && bytes >= streaming_threshold_bytes();
}

halide_buffer_t *Call::resolve(Arg a) { return buffers_.items[a.index].kernel_buffer(); }

void Call::finish(int status) {
  if (status == 0) {
    for (auto &b : buffers_) {
      if (!b.is_output || !b.on_device) continue;
      status = finish_device_output(&context_, b.kernel_buffer(), b.memory == Memory::cuda);
      if (status) break;
    }
  }
  for (auto &b : buffers_) {
    if (b.on_device && !b.released) {
      release_device(&context_, b.kernel_buffer(), b.memory == Memory::cuda);
      b.released = true;
    }
  }
  if (status != 0) {
    std::string why = context_.error.empty() ? stray_error : context_.error;
    stray_error.clear();
    if (why.empty()) why = "the kernel failed with Halide error code " + std::to_string(status);
    throw Error(std::string("hpipe::") + op_ + ": " + why);
  }
  for (auto &b : buffers_)
    if (b.is_output && b.dense.data()) copy_elements(*b.dense.raw_buffer(), *b.caller.raw_buffer());
}

void copy_to_host(const char *op, halide_type_t type, int rank, const std::int64_t *shape, const void *device,
                  const std::int64_t *device_strides, void *host, const std::int64_t *host_strides,
                  const Options &options) {
  if (has_no_elements(rank, shape)) return;
  install_error_handler();
  const auto halide_dims = [&](const std::int64_t *strides) {
    std::vector<halide_dimension_t> dims;
    for (int d = rank - 1; d >= 0; d--) {
      const std::int64_t stride = used_stride(shape[d], strides[d]);
      if (shape[d] > kInt32Max || std::abs(stride) > kInt32Max)  // the op checks its views as a Call does first
        throw std::logic_error(std::string("hpipe::") + op + ": copy_to_host of a view past 2^31");
      dims.push_back({0, static_cast<std::int32_t>(shape[d]), static_cast<std::int32_t>(stride), 0});
    }
    return dims;
  };
  auto from_dims = halide_dims(device_strides), to_dims = halide_dims(host_strides);
  CallContext context;
  context.cuda_stream = options.cuda_stream;
  Halide::Runtime::Buffer<void> from(type, nullptr, rank, from_dims.data()), to(type, host, rank, to_dims.data());
  wrap_device_pointer(&context, from.raw_buffer(), const_cast<void *>(device));
  from.raw_buffer()->set_device_dirty(true);
  const int status = copy_device_to_host(&context, from.raw_buffer(), to.raw_buffer());
  release_device(&context, from.raw_buffer(), true);
  if (status != 0) {
    const std::string why = !context.error.empty() ? context.error : "Halide error " + std::to_string(status);
    throw Error(std::string("hpipe::") + op + ": could not copy from the GPU: " + why);
  }
}

DeviceArray::DeviceArray(const char *op, halide_type_t type, int rank, const std::int64_t *shape, const void *data,
                         const std::int64_t *strides, const Options &options) {
  install_error_handler();
  context_.cuda_stream = options.cuda_stream;
  if (has_no_elements(rank, shape)) return;
  std::vector<int> sizes;  // Halide order
  std::size_t elements = 1;
  for (int d = rank - 1; d >= 0; d--) {
    sizes.push_back(static_cast<int>(shape[d]));
    elements *= static_cast<std::size_t>(shape[d]);
  }
  // A host copy's dense elements are staged in memory of our own (a Buffer that owned it would
  // free the device allocation with it), then copied up.
  std::vector<unsigned char> staging(data ? elements * type.bytes() : 0);
  buffer_ = Halide::Runtime::Buffer<void>(type, data ? staging.data() : nullptr, sizes);
  int status;
  if (data) {
    std::vector<halide_dimension_t> dims;
    for (int d = rank - 1; d >= 0; d--) {
      const std::int64_t stride = used_stride(shape[d], strides[d]);
      if (std::abs(stride) > kInt32Max)  // the op checks its views as a Call does first
        throw std::logic_error(std::string("hpipe::") + op + ": DeviceArray of a view with a stride past 2^31");
      dims.push_back({0, static_cast<std::int32_t>(shape[d]), static_cast<std::int32_t>(stride), 0});
    }
    const Halide::Runtime::Buffer<void> host(type, const_cast<void *>(data), rank, dims.data());
    copy_elements(*host.raw_buffer(), *buffer_.raw_buffer());
    buffer_.set_host_dirty(true);
    status = copy_to_device(&context_, buffer_.raw_buffer());
    buffer_.set_host_dirty(false);
    buffer_.raw_buffer()->host = nullptr;
  } else {
    status = allocate_device(&context_, buffer_.raw_buffer());
  }
  if (status != 0 || buffer_.raw_buffer()->device == 0) {
    release_device(&context_, buffer_.raw_buffer(), false);
    const std::string why = !context_.error.empty() ? context_.error
                            : status != 0           ? "Halide error " + std::to_string(status)
                                                    : "no device allocation";
    throw Error(std::string("hpipe::") + op + ": could not place its state on the GPU: " + why);
  }
  device_ = reinterpret_cast<void *>(static_cast<std::uintptr_t>(buffer_.raw_buffer()->device));
}

DeviceArray::~DeviceArray() {
  if (!device_) return;
  sync_device(&context_, buffer_.raw_buffer());  // kernels queued on the stream may still use it
  release_device(&context_, buffer_.raw_buffer(), false);
}

}  // namespace hpipe::detail
