// The DLPack ABI (https://github.com/dmlc/dlpack, versions 0.5 to 0.8): the structs a consumer of
// a "dltensor" capsule reads. Only the fields hpipe uses are named; the layout is the standard's.
#pragma once

#include <cstdint>

extern "C" {

enum DLDeviceTypeCode : std::int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,      // pinned host memory
  kDLCUDAManaged = 13,  // unified memory: a device pointer that the host can read too
};

enum DLDataTypeCode : std::uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
};

struct DLDevice {
  std::int32_t device_type;
  std::int32_t device_id;
};

struct DLDataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};

struct DLTensor {
  void *data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t *shape;
  std::int64_t *strides;  // in elements; null: compact C order
  std::uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(DLManagedTensor *self);
};

}  // extern "C"
