// hpipe preview: a colour picture (or a labelled montage of the bands) of a spectral cube.
#include "commands.h"
#include "file.h"
#include "preview.h"

namespace hpipe::cli {

int run_preview(Context &ctx) {
  if (ctx.positional.empty()) throw UsageError("hpipe preview: expected a CUBE (see hpipe preview --help)");
  const std::string out = ctx.checked_output_path();
  if (lower_case(out).size() < 4 || lower_case(out).substr(out.size() - 4) != ".png")
    throw UsageError("-o " + out + ": hpipe preview writes a .png");
  const std::optional<double> gain = parse_gain(ctx.value("--gain").value_or("1"));
  std::vector<Source> sources = ctx.read_inputs(ctx.positional, "cube");
  // The files' wavelengths, in the order the stack takes their bands: only when every file has its own.
  std::vector<double> file_nm;
  bool every_file = true;
  for (const Source &s : sources) {
    every_file = every_file && !s.wavelengths.empty();
    file_nm.insert(file_nm.end(), s.wavelengths.begin(), s.wavelengths.end());
  }
  if (!every_file) file_nm.clear();
  const Stack<double> cube = ctx.stack<double>(std::move(sources));
  const std::string name = cube.files.size() == 1 ? cube.files[0] : ctx.positional[0];
  const Shape &s = cube.shape;
  if (s.size() < 2 || s.size() > 3)
    throw Failure(name + ": shape " + shape_string(s) + " is not a cube (C, H, W) or an image (H, W)");
  const std::int64_t bands = s.size() == 3 ? s[0] : 1, h = s[s.size() - 2], w = s.back();
  const bool montage = ctx.has("--montage");
  const std::vector<double> nm = band_wavelengths(ctx.value("--wavelengths"), file_nm, bands, name, !montage);
  const Picture picture = ctx.timed("compute", [&] {
    return montage ? render_montage(cube.data.data(), bands, h, w, nm, gain)
                   : render_colour(cube.data.data(), bands, h, w, nm, gain);
  });
  ctx.timed("write", [&] {
    OutputSet outputs({out}, ctx.input_files(), ctx.write.force);
    write_picture(outputs.destination(0), picture);
    outputs.commit();
  });
  ctx.summary.set("path", out).set("bands", bands).set("wavelengths", nm).set("montage", montage);
  ctx.summary.set("size", Shape{picture.height, picture.width});
  ctx.say("wrote " + out + ": " + (montage ? "montage of " : "colour picture of ") + std::to_string(bands) +
          " bands, " + std::to_string(picture.height) + " x " + std::to_string(picture.width) + " (H x W)");
  return 0;
}

}  // namespace hpipe::cli
