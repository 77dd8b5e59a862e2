// hpipe: Halide kernels for spectral imaging and batched tensor math.
#pragma once

#include "hpipe/cassi.h"
#include "hpipe/conv1d.h"
#include "hpipe/device.h"
#include "hpipe/dot.h"
#include "hpipe/error.h"
#include "hpipe/math.h"
#include "hpipe/recon.h"
#include "hpipe/synth.h"
#include "hpipe/view.h"
