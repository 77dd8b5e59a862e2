// hpipe synth: the deterministic synthetic scene and mask (hpipe::synth_scene, hpipe::synth_mask).
#include "commands.h"
#include "file.h"
#include "formats.h"
#include "hpipe/synth.h"

namespace hpipe::cli {

int run_synth(Context &ctx) {
  if (!ctx.positional.empty()) throw UsageError("hpipe synth: takes no input files (see hpipe synth --help)");
  const std::string out = ctx.checked_output_path();
  const std::int64_t bands = ctx.integer("--bands", 28, 1, 1 << 20);
  const std::int64_t height = ctx.integer("--height", 256, 1, 1 << 20);
  const std::int64_t width = ctx.integer("--width", 256, 1, 1 << 20);
  const std::int64_t seed = ctx.integer("--seed", 1, 0, INT64_MAX);
  const auto mask_path = ctx.value("--mask");
  // The scene's files before it is computed (a PNG too large for the format was refused after
  // computing a scene of 17 GB).
  const std::vector<std::string> scene_files = plan_output(out, {bands, height, width}).files;
  if (mask_path) {  // the mask must not land on the scene, written just before it
    output_format(*mask_path, "--mask");
    for (const std::string &m : plan_output(*mask_path, {height, width}).files)
      for (const std::string &f : scene_files)
        if (same_file(m, f))
          throw UsageError("--mask " + *mask_path + ": names the file " + f + " that -o " + out +
                           " writes; give the mask its own file");
  }
  const auto scene = ctx.timed("compute", [&] { return synth_scene(bands, height, width); });
  ctx.write_output(out, {bands, height, width}, hpipe::AlignedVector<float>(scene.data(), scene.data() + scene.size()),
                   DType::f32);
  if (mask_path) {
    const auto mask = ctx.timed("compute", [&] { return synth_mask(height, width, static_cast<std::uint64_t>(seed)); });
    ctx.write_output(*mask_path, {height, width}, hpipe::AlignedVector<float>(mask.data(), mask.data() + mask.size()),
                     DType::f32);
  }
  ctx.summary.set("bands", bands).set("height", height).set("width", width).set("seed", seed);
  return 0;
}

}  // namespace hpipe::cli
