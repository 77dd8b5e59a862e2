// The subcommand table: adding a subcommand is one entry here plus its run_<name> function.
#include "commands.h"

namespace hpipe::cli {

namespace {

// The CASSI model's options, shared by cassi and recon.
const std::vector<Option> kCassiModel = {
    {"--mask", nullptr, "STACK", "the coded mask (required)"},
    {"--step", nullptr, "S", "displacement between neighbouring bands in pixels, any sign (default 2)"},
    {"--axis", nullptr, "x|y", "dispersion along x (width, default) or y (height)"},
    {"--bands", nullptr, "C",
     "band count of the cube (default: from a per-band mask or the widths; forward: must match the cube)"},
    {"--tsa-norm", nullptr, nullptr,
     "the measurement is y / C * 2, as TSA-Net/MST code normalises it (see docs/cli.md)"}};

// recon's own options, also taken by batch.
const std::vector<Option> kReconOptions = {
    {"--iters", nullptr, "N", "outer iterations (default 20; 0 returns A^T y)"},
    {"--tv-weight", nullptr, "W", "TV weight, > 0: larger is smoother (default 0.1)"},
    {"--tv-iters", nullptr, "N", "Chambolle iterations per TV step, >= 1 (default 5)"},
    {"--vectorial", nullptr, nullptr, "band-coupled TV (slower)"},
    {"--lambda", nullptr, "L", "step of the data term, > 0 (default 1)"},
    {"--gamma", nullptr, "G", "admm-tv only (an error with gap-tv): added to Phi, >= 0 (default 0.01)"},
    {"--no-accelerate", nullptr, nullptr, "gap-tv only (an error with admm-tv): the plain (not accelerated) update"},
    {"--truth", nullptr, "STACK", "the true cube: print PSNR and SSIM"},
    {"--preview", nullptr, "DIR", "colour pictures: DIR/result.png; with --truth also truth, pinv, comparison"},
    {"--wavelengths", nullptr, "LIST|START:STOP", "band centres in nm for --preview (see hpipe preview)"}};

std::vector<Option> joined(std::vector<Option> a, const std::vector<Option> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

const std::vector<Command> &commands() {
  static const std::vector<Command> table = {
      {"info",
       "STACK...",
       "Print each file's format, shape, element type and value range.",
       "",
       "hpipe info scene/ mask.png measurement.npy",
       {},
       kReads,
       run_info},
      {"convert",
       "STACK",
       "Read a stack and write it in another format or type (PNG, .npy, .mat, .h5, .tif, ENVI .hdr).",
       "The element type is kept unless --type says otherwise (floats to PNG: u16). Cubes go to .mat and .h5\n"
       "as (H, W, C) unless --output-layout chw; see docs/cli.md for each format.",
       "hpipe convert 'scene/band_*.png' -o scene.npy",
       {},
       kReads | kWrites,
       run_convert},
      {"diff",
       "STACK_A STACK_B",
       "Compare two stacks of the same shape: max and mean absolute difference.",
       "A NaN in the same place in both counts as equal (as np.testing.assert_array_equal), a NaN against\n"
       "a number as a difference of NaN; the count of elements that differ follows the same rule.",
       "hpipe diff measurement.png measurement_again.npy",
       {},
       kReads,
       run_diff},
      {"synth",
       "",
       "Write the deterministic synthetic scene (C, H, W) and coded mask (H, W) used by the demo and tests.",
       "Scene values lie in [0, 1]; mask values in (0, 1] (in a PNG, those below half a step round to\n"
       "0: a .npy keeps them). The same bytes on every machine.",
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
       "The mask is (H, W) shared by all bands, or (C, H, W) one per band (a stack), or pre-shifted as the\n"
       "published code's mask_3d_shift (C, H, W') (read from (H, W', C) .mat files). For the inverses the\n"
       "band count comes from --bands, a per-band mask, or the measurement and mask widths.",
       "hpipe cassi forward scene/ --mask mask.png --step 2 -o y.png --scale auto", kCassiModel,
       kReads | kWrites | kComputes, run_cassi},
      {"dot",
       "STACK --with SPECTRUM",
       "Per-pixel dot product of the band vector with a spectrum: (C, H, W) -> (H, W), (B, C, H, W) -> (B, H, W).",
       "SPECTRUM is C numbers, as a comma list (\"0.1,0.5,1\") or a file (.npy of shape (C,)).",
       "hpipe dot scene/ --with weights.npy -o luminance.png --scale auto",
       {{"--with", nullptr, "SPECTRUM", "the C weights: a comma list or a .npy file (required)"}},
       kReads | kWrites | kComputes,
       run_dot},
      {"conv1d",
       "STACK (--taps LIST | --taps-file FILE)",
       "1-D convolution (np.convolve) of every signal along an axis: x (rows), y (columns) or band (spectra).",
       "The taps are flipped, as np.convolve does. --taps-file holds (Lv,) taps shared by every signal, or\n"
       "(N, Lv), one row per signal, N signals counted in C order over the other axes (for --axis band\n"
       "of a (C, H, W) stack, N = H * W: row h * W + w is pixel (h, w)). The output's axis has length\n"
       "max(L, Lv) (same, the default: L unless the kernel is longer), L + Lv - 1 (full) or\n"
       "max(L, Lv) - min(L, Lv) + 1 (valid), as np.convolve.",
       "hpipe conv1d scene/ --taps 1,2,1 --axis band --mode same -o smooth.npy",
       {{"--taps", nullptr, "LIST", "the kernel as a comma list (1,2,1)"},
        {"--taps-file", nullptr, "FILE", "the kernel(s) from a file: (Lv,) shared or (N, Lv) one per signal"},
        {"--axis", nullptr, "x|y|band", "convolve along x (the last axis, default), y or band"},
        {"--mode", nullptr, "full|same|valid", "output length as np.convolve (default same)"}},
       kReads | kWrites | kComputes,
       run_conv1d},
      {"recon", "gap-tv|admm-tv MEASUREMENT",
       "Iterative CASSI reconstruction with total-variation regularisation: measurement -> bands (C, H, W).",
       "One line per iteration gives the residual ||y - A x||. With --truth, PSNR and SSIM per band and\n"
       "their means, and the same means for the pseudo-inverse (cassi pinv) of the measurement.\n"
       "See docs/recon.md for the algorithms and what the parameters mean.",
       "hpipe recon gap-tv y.png --mask mask.png --iters 20 --truth scene/ -o x/band_%02d.png",
       joined(kCassiModel, kReconOptions), kReads | kWrites | kComputes, run_recon},
      {"map",
       "exp|log|erf STACK",
       "Elementwise exp, log or erf of every value; the shape is kept.",
       "Accuracy and special values (log(0) = -inf, log(x < 0) = NaN) as stated in hpipe/math.h.",
       "hpipe map log scene/ -o log_scene.npy",
       {},
       kReads | kWrites | kComputes,
       run_map},
      {"logsumexp",
       "STACK",
       "log(sum(exp(x))) along an axis, as scipy.special.logsumexp, dropping it: (C, H, W) -> (H, W) along band.",
       "Stable (shifted by the maximum), accumulated in double. The stack has 1 to 4 dimensions: x is the\n"
       "last axis, y the one before, band the one before that (a 2-D (H, W) array along y is scipy's axis=0).",
       "hpipe logsumexp scene/ --axis band -o lse.npy",
       {{"--axis", nullptr, "band|x|y", "the axis to reduce (default band)"}},
       kReads | kWrites | kComputes,
       run_logsumexp},
      {"preview",
       "CUBE",
       "A colour picture of a spectral cube (C, H, W) through the CIE 1931 colour-matching functions, or a montage.",
       "The band wavelengths come from --wavelengths, else the file (ENVI), else the 28 KAIST/TSA-Net bands\n"
       "(453.3 ... 648.1 nm) for a 28-band cube. Values are linear, [0, 1] full scale (--gain to change);\n"
       "a flat spectrum renders grey. --montage draws every band in grey, labelled with its wavelength.",
       "hpipe preview scene.mat -o scene.png",
       {{"--output", "-o", "PNG", "the picture (required)"},
        {"--wavelengths", nullptr, "LIST|START:STOP",
         "band centres in nm: C numbers, or evenly spaced from START to STOP"},
        {"--montage", nullptr, nullptr, "every band in grey in a labelled grid, instead of the colour picture"},
        {"--gain", nullptr, "G|auto", "multiply values by G (default 1); auto: the 99th percentile to full scale"},
        {"--force", nullptr, nullptr, "overwrite an existing picture (never an input)"}},
       kReads,
       run_preview},
      {"batch", "cassi|recon MODE FOLDER|MANIFEST... -o OUTDIR",
       "Run cassi or recon once per input file, outputs OUTDIR/NAME.npy; resumable, sharded, or on a Dask cluster.",
       "The items are a folder's .png/.npy files, a glob's files, files named, or the rows of a manifest\n"
       "(a .txt file, one path a line, relative to its folder). Each item is the subcommand on one file with\n"
       "the options given here (see its --help); its output OUTDIR/NAME.EXT is named after its input and\n"
       "appears only when complete, so a re-run skips finished items. A failed item is reported and retried\n"
       "once; the others go on; the exit status is 1 when any failed. Without --shard or --scheduler the items\n"
       "run here, --workers at once with cores / workers threads each. See docs/scale-out.md for Slurm,\n"
       "Kubernetes and Dask.",
       "hpipe batch recon gap-tv measurements/ --mask mask.png --iters 50 -o recon/ --shard 0/8",
       joined(kBatchOptions, joined(kCassiModel, kReconOptions)), kReads | kWrites | kComputes, run_batch},
  };
  return table;
}

}  // namespace hpipe::cli
