// The subcommand table: adding a subcommand is one entry here plus its run_<name> function.
#include "commands.h"

namespace hpipe::cli {

const std::vector<Command> &commands() {
  static const std::vector<Command> table = {
      {"info", "STACK...", "Print each file's format, shape, element type and value range.", "",
       "hpipe info scene/ mask.png measurement.npy",
       {},
       kReads,
       run_info},
      {"convert", "STACK", "Read a stack and write it in another format or type (PNG <-> .npy).",
       "The element type is kept unless --type says otherwise (floats to PNG: u16).",
       "hpipe convert 'scene/band_*.png' -o scene.npy",
       {},
       kReads | kWrites,
       run_convert},
      {"diff", "STACK_A STACK_B", "Compare two stacks of the same shape: max and mean absolute difference.", "",
       "hpipe diff measurement.png measurement_again.npy",
       {},
       kReads,
       run_diff},
      {"synth", "", "Write the deterministic synthetic scene (C, H, W) and coded mask (H, W) used by the demo and tests.",
       "Scene values lie in [0, 1]; mask values in (0, 1]. The same bytes on every machine.",
       "hpipe synth -o scene/band_%02d.png --mask mask.png",
       {{"--bands", nullptr, "C", "spectral bands (default 28)"},
        {"--height", nullptr, "H", "image height (default 256)"},
        {"--width", nullptr, "W", "image width (default 256)"},
        {"--seed", nullptr, "N", "mask seed (default 1)"},
        {"--mask", nullptr, "FILE", "also write the mask to FILE (.png or .npy)"}},
       kWrites,
       run_synth},
      {"cassi", "forward|adjoint|pinv|pinv-alpha|phi [STACK]",
       "CASSI operators: band stack (C, H, W) <-> measurement (H, W') through a coded mask and a dispersion.",
       "  forward      STACK of C bands (or a (B, C, H, W) .npy) -> measurement (H, W'), W' = W + (C-1)|step|\n"
       "  adjoint      measurement -> bands (A^T)\n"
       "  pinv         measurement -> bands, A^T(y / Phi): A(pinv(y)) = y\n"
       "  pinv-alpha   measurement -> bands, the column-count inverse\n"
       "  phi          -> Phi (H', W') = sum over bands of the shifted mask squared (no STACK)\n"
       "The mask is (H, W) shared by all bands, or (C, H, W) one per band (a stack). For the inverses the\n"
       "band count comes from --bands, a per-band mask, or the measurement and mask widths.",
       "hpipe cassi forward scene/ --mask mask.png --step 2 -o y.png --scale auto",
       {{"--mask", nullptr, "STACK", "the coded mask (required)"},
        {"--step", nullptr, "S", "displacement between neighbouring bands in pixels, any sign (default 2)"},
        {"--axis", nullptr, "x|y", "dispersion along x (width, default) or y (height)"},
        {"--bands", nullptr, "C", "band count of the cube (inverses and phi)"}},
       kReads | kWrites,
       run_cassi},
      // After the merge of issues 3, 4 and 7: map, logsumexp, dot, conv1d, recon.
  };
  return table;
}

}  // namespace hpipe::cli
