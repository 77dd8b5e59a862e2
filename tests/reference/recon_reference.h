// Double-precision reference of the reconstruction family, written from the algorithm
// descriptions as plain loops: skimage's denoise_tv_chambolle (per 2-D image, its loop structure:
// divergence -> out -> gradient -> dual update, returning the last `out`), accelerated GAP-TV and
// ADMM-TV as in Yuan's reference code, PSNR and SSIM (Wang et al. 2004, computed directly per window
// with the 2-D Gaussian, no separable filtering). The CASSI operators come from cassi_reference.h.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "reference/cassi_reference.h"

namespace hpipe::reference {

// One H x W image (row-major), `iterations` as skimage's max_num_iter, eps = 0.
inline std::vector<double> tv_chambolle_image(const std::vector<double> &image, std::int64_t H, std::int64_t W,
                                              double weight, int iterations) {
  const std::int64_t n = H * W;
  std::vector<double> p0(n, 0.0), p1(n, 0.0);  // p[0]: along height (axis 0), p[1]: along width
  std::vector<double> g0(n, 0.0), g1(n, 0.0), d(n, 0.0), out = image;
  const double tau = 1.0 / 4.0;
  for (int i = 0; i < iterations; i++) {
    if (i > 0) {
      // d = -p.sum(0); d[1:, :] += p[0][:-1, :]; d[:, 1:] += p[1][:, :-1]
      for (std::int64_t k = 0; k < n; k++) d[k] = -p0[k] - p1[k];
      for (std::int64_t h = 1; h < H; h++)
        for (std::int64_t w = 0; w < W; w++) d[h * W + w] += p0[(h - 1) * W + w];
      for (std::int64_t h = 0; h < H; h++)
        for (std::int64_t w = 1; w < W; w++) d[h * W + w] += p1[h * W + w - 1];
      for (std::int64_t k = 0; k < n; k++) out[k] = image[k] + d[k];
    } else {
      out = image;
    }
    // g[0][:-1] = diff(out, axis 0); g[1][:, :-1] = diff(out, axis 1); the last row/column stays 0.
    for (std::int64_t h = 0; h + 1 < H; h++)
      for (std::int64_t w = 0; w < W; w++) g0[h * W + w] = out[(h + 1) * W + w] - out[h * W + w];
    for (std::int64_t h = 0; h < H; h++)
      for (std::int64_t w = 0; w + 1 < W; w++) g1[h * W + w] = out[h * W + w + 1] - out[h * W + w];
    for (std::int64_t k = 0; k < n; k++) {
      const double norm = 1.0 + std::sqrt(g0[k] * g0[k] + g1[k] * g1[k]) * (tau / weight);
      p0[k] = (p0[k] - tau * g0[k]) / norm;
      p1[k] = (p1[k] - tau * g1[k]) / norm;
    }
  }
  return out;
}

// The vectorial TV of one batch item (C images of H x W): skimage's loop with the norm summed over
// the bands of a pixel.
inline std::vector<double> tv_chambolle_vectorial_item(const std::vector<double> &image, std::int64_t C, std::int64_t H,
                                                       std::int64_t W, double weight, int iterations) {
  const std::int64_t n = H * W, total = C * n;
  std::vector<double> p0(total, 0.0), p1(total, 0.0), g0(total, 0.0), g1(total, 0.0), out = image;
  const double tau = 1.0 / 4.0;
  for (int i = 0; i < iterations; i++) {
    for (std::int64_t c = 0; c < C; c++)
      for (std::int64_t h = 0; h < H; h++)
        for (std::int64_t w = 0; w < W; w++) {
          const std::int64_t k = c * n + h * W + w;
          double d = -p0[k] - p1[k];
          if (h > 0) d += p0[k - W];
          if (w > 0) d += p1[k - 1];
          out[k] = image[k] + (i > 0 ? d : 0.0);
        }
    for (std::int64_t c = 0; c < C; c++)
      for (std::int64_t h = 0; h < H; h++)
        for (std::int64_t w = 0; w < W; w++) {
          const std::int64_t k = c * n + h * W + w;
          g0[k] = h + 1 < H ? out[k + W] - out[k] : 0.0;
          g1[k] = w + 1 < W ? out[k + 1] - out[k] : 0.0;
        }
    for (std::int64_t q = 0; q < n; q++) {
      double sum = 0;
      for (std::int64_t c = 0; c < C; c++) sum += g0[c * n + q] * g0[c * n + q] + g1[c * n + q] * g1[c * n + q];
      const double norm = 1.0 + std::sqrt(sum) * (tau / weight);
      for (std::int64_t c = 0; c < C; c++) {
        p0[c * n + q] = (p0[c * n + q] - tau * g0[c * n + q]) / norm;
        p1[c * n + q] = (p1[c * n + q] - tau * g1[c * n + q]) / norm;
      }
    }
  }
  return out;
}

// Every (batch, band) image of a (B, C, H, W) cube on its own, or every batch item's bands
// together (vectorial).
inline std::vector<double> tv_chambolle(const CassiProblem &p, const std::vector<double> &x, double weight,
                                        int iterations, bool vectorial = false) {
  std::vector<double> out(x.size());
  if (vectorial) {
    const std::int64_t item = p.C * p.H * p.W;
    for (std::int64_t b = 0; b < p.B; b++) {
      const std::vector<double> image(x.begin() + b * item, x.begin() + (b + 1) * item);
      const auto denoised = tv_chambolle_vectorial_item(image, p.C, p.H, p.W, weight, iterations);
      std::copy(denoised.begin(), denoised.end(), out.begin() + b * item);
    }
    return out;
  }
  const std::int64_t n = p.H * p.W;
  for (std::int64_t i = 0; i < p.B * p.C; i++) {
    const std::vector<double> image(x.begin() + i * n, x.begin() + (i + 1) * n);
    const auto denoised = tv_chambolle_image(image, p.H, p.W, weight, iterations);
    std::copy(denoised.begin(), denoised.end(), out.begin() + i * n);
  }
  return out;
}

struct ReconSettings {
  int iterations = 20;
  double lambda = 1.0, gamma = 0.01;
  bool accelerate = true;
  double tv_weight = 0.1;
  int tv_iterations = 5;
  bool vectorial = false;
};

inline double norm2(const std::vector<double> &a, const std::vector<double> &b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); i++) s += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(s);
}

// The result and ||y - A x_k|| after every iteration.
struct ReconResult {
  std::vector<double> x;
  std::vector<double> residuals;
};

// z / Phi (or Phi + gamma), per batch item.
inline std::vector<double> divide_by_phi(const CassiProblem &p, const std::vector<double> &z,
                                         const std::vector<double> &phi, double gamma) {
  std::vector<double> out(z.size());
  const std::int64_t n = p.Hm() * p.Wm();
  for (std::size_t i = 0; i < z.size(); i++) out[i] = z[i] / (phi[i % n] + gamma);
  return out;
}

inline ReconResult gap_tv(const CassiProblem &p, const std::vector<double> &y, const std::vector<double> &m,
                          const ReconSettings &s) {
  const auto phi = cassi_phi(p, m);
  std::vector<double> x = cassi_adjoint(p, y, m), y1(y.size(), 0.0), r(y.size());
  ReconResult result;
  for (int it = 0; it < s.iterations; it++) {
    const auto yb = cassi_forward(p, x, m);
    for (std::size_t i = 0; i < y.size(); i++) {
      y1[i] += y[i] - yb[i];
      r[i] = (s.accelerate ? y1[i] : y[i]) - yb[i];
    }
    const auto step = cassi_adjoint(p, divide_by_phi(p, r, phi, 0.0), m);
    for (std::size_t i = 0; i < x.size(); i++) x[i] += s.lambda * step[i];
    x = tv_chambolle(p, x, s.tv_weight, s.tv_iterations, s.vectorial);
    result.residuals.push_back(norm2(y, cassi_forward(p, x, m)));
  }
  result.x = x;
  return result;
}

inline ReconResult admm_tv(const CassiProblem &p, const std::vector<double> &y, const std::vector<double> &m,
                           const ReconSettings &s) {
  const auto phi = cassi_phi(p, m);
  std::vector<double> theta = cassi_adjoint(p, y, m), b(theta.size(), 0.0), v(theta.size()), r(y.size());
  ReconResult result;
  for (int it = 0; it < s.iterations; it++) {
    for (std::size_t i = 0; i < v.size(); i++) v[i] = theta[i] + b[i];
    const auto yb = cassi_forward(p, v, m);
    for (std::size_t i = 0; i < y.size(); i++) r[i] = y[i] - yb[i];
    const auto step = cassi_adjoint(p, divide_by_phi(p, r, phi, s.gamma), m);
    std::vector<double> x(v.size()), x_minus_b(v.size());
    for (std::size_t i = 0; i < x.size(); i++) {
      x[i] = v[i] + s.lambda * step[i];
      x_minus_b[i] = x[i] - b[i];
    }
    theta = tv_chambolle(p, x_minus_b, s.tv_weight, s.tv_iterations, s.vectorial);
    for (std::size_t i = 0; i < b.size(); i++) b[i] -= x[i] - theta[i];
    result.residuals.push_back(norm2(y, cassi_forward(p, theta, m)));
  }
  result.x = theta;
  return result;
}

inline double psnr(const std::vector<double> &a, const std::vector<double> &t) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); i++) s += (a[i] - t[i]) * (a[i] - t[i]);
  return 10 * std::log10(1.0 / (s / double(a.size())));
}

// SSIM, window by window with the full 11 x 11 Gaussian (sigma 1.5), data range 1.
inline double ssim(const std::vector<double> &a, const std::vector<double> &t, std::int64_t H, std::int64_t W) {
  double win[11][11], total_w = 0;
  for (int i = 0; i < 11; i++)
    for (int j = 0; j < 11; j++) total_w += win[i][j] = std::exp(-((i - 5) * (i - 5) + (j - 5) * (j - 5)) / 4.5);
  const double c1 = 1e-4, c2 = 9e-4;
  double total = 0;
  for (std::int64_t h = 0; h + 11 <= H; h++)
    for (std::int64_t w = 0; w + 11 <= W; w++) {
      double ma = 0, mt = 0, aa = 0, tt = 0, at = 0;
      for (int i = 0; i < 11; i++)
        for (int j = 0; j < 11; j++) {
          const double k = win[i][j] / total_w, va = a[(h + i) * W + w + j], vt = t[(h + i) * W + w + j];
          ma += k * va, mt += k * vt, aa += k * va * va, tt += k * vt * vt, at += k * va * vt;
        }
      const double sa = aa - ma * ma, st = tt - mt * mt, sat = at - ma * mt;
      total += (2 * ma * mt + c1) * (2 * sat + c2) / ((ma * ma + mt * mt + c1) * (sa + st + c2));
    }
  return total / double((H - 10) * (W - 10));
}

}  // namespace hpipe::reference
