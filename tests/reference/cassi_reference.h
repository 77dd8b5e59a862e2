// Double-precision reference of the CASSI operators, written from the definitions in
// shared/workloads.md (W4) as plain loops over NumPy-order arrays. Independent of the kernels:
// the forward scatters band by band where the kernel gathers.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <vector>

namespace hpipe::reference {

struct CassiProblem {
  std::int64_t B, C, H, W;
  int step;
  bool along_height = false;
  bool per_band_mask = false;

  std::int64_t spread() const { return (C - 1) * std::abs(step); }
  std::int64_t Hm() const { return H + (along_height ? spread() : 0); }  // measurement height
  std::int64_t Wm() const { return W + (along_height ? 0 : spread()); }  // measurement width
  // Offset of band c: bands move by `step` each, and the whole pattern starts at 0.
  std::int64_t offset(std::int64_t c) const { return step >= 0 ? c * step : (C - 1 - c) * -step; }
  std::int64_t dh(std::int64_t c) const { return along_height ? offset(c) : 0; }
  std::int64_t dw(std::int64_t c) const { return along_height ? 0 : offset(c); }

  std::int64_t cube_index(std::int64_t b, std::int64_t c, std::int64_t h, std::int64_t w) const {
    return ((b * C + c) * H + h) * W + w;
  }
  std::int64_t meas_index(std::int64_t b, std::int64_t h, std::int64_t w) const { return (b * Hm() + h) * Wm() + w; }
  std::int64_t shifted_index(std::int64_t b, std::int64_t c, std::int64_t h, std::int64_t w) const {
    return ((b * C + c) * Hm() + h) * Wm() + w;
  }
  double mask(const std::vector<double> &m, std::int64_t c, std::int64_t h, std::int64_t w) const {
    return m[((per_band_mask ? c : 0) * H + h) * W + w];
  }
};

inline std::vector<double> cassi_forward(const CassiProblem &p, const std::vector<double> &x,
                                         const std::vector<double> &m) {
  std::vector<double> y(p.B * p.Hm() * p.Wm(), 0.0);
  for (std::int64_t b = 0; b < p.B; b++)
    for (std::int64_t c = 0; c < p.C; c++)
      for (std::int64_t h = 0; h < p.H; h++)
        for (std::int64_t w = 0; w < p.W; w++)
          y[p.meas_index(b, h + p.dh(c), w + p.dw(c))] += p.mask(m, c, h, w) * x[p.cube_index(b, c, h, w)];
  return y;
}

inline std::vector<double> cassi_adjoint(const CassiProblem &p, const std::vector<double> &y,
                                         const std::vector<double> &m) {
  std::vector<double> x(p.B * p.C * p.H * p.W);
  for (std::int64_t b = 0; b < p.B; b++)
    for (std::int64_t c = 0; c < p.C; c++)
      for (std::int64_t h = 0; h < p.H; h++)
        for (std::int64_t w = 0; w < p.W; w++)
          x[p.cube_index(b, c, h, w)] = p.mask(m, c, h, w) * y[p.meas_index(b, h + p.dh(c), w + p.dw(c))];
  return x;
}

inline std::vector<double> cassi_phi(const CassiProblem &p, const std::vector<double> &m) {
  std::vector<double> phi(p.Hm() * p.Wm(), 0.0);
  for (std::int64_t c = 0; c < p.C; c++)
    for (std::int64_t h = 0; h < p.H; h++)
      for (std::int64_t w = 0; w < p.W; w++) {
        const double v = p.mask(m, c, h, w);
        phi[(h + p.dh(c)) * p.Wm() + w + p.dw(c)] += v * v;
      }
  for (double &v : phi)
    if (v == 0) v = 1;
  return phi;
}

inline std::vector<double> cassi_pinv(const CassiProblem &p, const std::vector<double> &y,
                                      const std::vector<double> &m) {
  const std::vector<double> phi = cassi_phi(p, m);
  std::vector<double> z(y.size());
  for (std::int64_t b = 0; b < p.B; b++)
    for (std::int64_t i = 0; i < p.Hm() * p.Wm(); i++) z[b * p.Hm() * p.Wm() + i] = y[b * p.Hm() * p.Wm() + i] / phi[i];
  return cassi_adjoint(p, z, m);
}

// The forum post's inverse: divide by the number of bands covering each column, crop, divide by
// the mask (0 where the mask is 0).
inline std::vector<double> cassi_pinv_alpha(const CassiProblem &p, const std::vector<double> &y,
                                            const std::vector<double> &m) {
  std::vector<double> alpha(p.Hm() * p.Wm(), 0.0);
  for (std::int64_t c = 0; c < p.C; c++)
    for (std::int64_t h = 0; h < p.H; h++)
      for (std::int64_t w = 0; w < p.W; w++) alpha[(h + p.dh(c)) * p.Wm() + w + p.dw(c)] += 1;
  std::vector<double> x(p.B * p.C * p.H * p.W);
  for (std::int64_t b = 0; b < p.B; b++)
    for (std::int64_t c = 0; c < p.C; c++)
      for (std::int64_t h = 0; h < p.H; h++)
        for (std::int64_t w = 0; w < p.W; w++) {
          const std::int64_t hm = h + p.dh(c), wm = w + p.dw(c);
          const double mv = p.mask(m, c, h, w);
          x[p.cube_index(b, c, h, w)] = mv == 0 ? 0.0 : y[p.meas_index(b, hm, wm)] / alpha[hm * p.Wm() + wm] / mv;
        }
  return x;
}

inline std::vector<double> cassi_shift(const CassiProblem &p, const std::vector<double> &x) {
  std::vector<double> out(p.B * p.C * p.Hm() * p.Wm(), 0.0);
  for (std::int64_t b = 0; b < p.B; b++)
    for (std::int64_t c = 0; c < p.C; c++)
      for (std::int64_t h = 0; h < p.H; h++)
        for (std::int64_t w = 0; w < p.W; w++)
          out[p.shifted_index(b, c, h + p.dh(c), w + p.dw(c))] = x[p.cube_index(b, c, h, w)];
  return out;
}

inline std::vector<double> cassi_shift_back(const CassiProblem &p, const std::vector<double> &s) {
  std::vector<double> x(p.B * p.C * p.H * p.W);
  for (std::int64_t b = 0; b < p.B; b++)
    for (std::int64_t c = 0; c < p.C; c++)
      for (std::int64_t h = 0; h < p.H; h++)
        for (std::int64_t w = 0; w < p.W; w++)
          x[p.cube_index(b, c, h, w)] = s[p.shifted_index(b, c, h + p.dh(c), w + p.dw(c))];
  return x;
}

}  // namespace hpipe::reference
