// Deterministic synthetic data: the same bytes on every machine, for demos, tests and the CLI.
#pragma once

#include <cstdint>

#include "hpipe/view.h"

namespace hpipe {

// A spectral scene (C, H, W) with values in [0, 1]: a smooth background and a few flat-edged
// shapes (discs, rectangles, a ring), each with its own smooth spectrum (a Gaussian bump over
// the band axis on a base level).
Array<float, 3> synth_scene(std::int64_t bands = 28, std::int64_t height = 256, std::int64_t width = 256);

// A coded-aperture mask (H, W) with values uniform in (0, 1], from a fixed generator and `seed`.
Array<float, 2> synth_mask(std::int64_t height = 256, std::int64_t width = 256, std::uint64_t seed = 1);

}  // namespace hpipe
