// The tables `hpipe-tune bundle` generates (bundle_table.cpp) and the driver reads
// (bundle_main.cpp). Plain C++: the bundle links no Halide library, only its runtime object.
#pragma once

struct halide_filter_metadata_t;

namespace hpipe::tune::bundle {

constexpr int kMaxDims = 8, kMaxOutputs = 4;

struct BundleArg {
  const char *name;
  int is_buffer;
  int dims;
  int extents[kMaxDims];
  int strides[kMaxDims];
  const float *values;  // null in the timing case: the driver fills random values
  int scalar;
  int is_float;  // a float32 scalar, `real`
  float real;
};

struct BundleCase {
  const char *shape;
  const BundleArg *args;
  int arg_count;
  int out_count;  // output buffers: a Tuple output's elements, then further outputs
  struct {
    int dims;
    int extents[kMaxDims];
  } outs[kMaxOutputs];
  const double *expected;  // the reference output (every output buffer, one after another); null
                           // in the timing case (coverage is checked)
};

struct BundleOp {
  const char *name;
  const BundleCase *cases;  // the timing case first
  int case_count;
  double tol_abs, tol_rel;
};

struct BundleVariant {
  int op;
  const char *scheduler;  // knobs or test-corrupt
  const char *knobs;
  int is_default;
  int (*argv)(void **);
  const halide_filter_metadata_t *(*metadata)();
};

extern const BundleOp kOps[];
extern const int kOpCount;
extern const BundleVariant kVariants[];
extern const int kVariantCount;
extern const char kTarget[];

}  // namespace hpipe::tune::bundle
