// attention and attention_grad: against a naive reference that materialises the scores in double
// (odd shapes, every mask layout, causal, -inf entries, fully masked rows), a finite-difference
// check of the gradient, bf16 operands, malformed calls, and the workspace's size.
#include "runtime/support/half_float.h"
#include "tests/unit/kernels/test_support.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace shardc::runtime::testing {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// How the mask is laid out relative to the leading dims (batch, heads).
enum class MaskKind {
  None,
  QueryKey,    // [S, Sk]
  KeyPadding,  // [B, 1, 1, Sk] (rank of the scores, 1 everywhere but the first and last dims)
  PerBatchRow, // [B, 1, S, Sk]
};

struct Problem {
  std::vector<int64_t> lead; // leading dims of q, k, v
  int64_t S = 1, Sk = 1, D = 1, Dv = 1;
  MaskKind maskKind = MaskKind::None;
  bool causal = false;
  float scale = 0.5f;
  bool bf16 = false;
  unsigned seed = 1;
  // Put -inf on this fraction of mask entries (never on key 0, so no row is fully masked
  // unless a test does that itself).
  double minusInfFraction = 0.1;

  int64_t batch() const { return numelOf(lead); }
  std::vector<int64_t> shape(int64_t rows, int64_t cols) const {
    std::vector<int64_t> s = lead;
    s.push_back(rows);
    s.push_back(cols);
    return s;
  }
  std::vector<int64_t> maskShape() const {
    const std::vector<int64_t> scores = shape(S, Sk);
    std::vector<int64_t> m;
    switch (maskKind) {
    case MaskKind::None:
      break;
    case MaskKind::QueryKey:
      m = {S, Sk};
      break;
    case MaskKind::KeyPadding:
      m.assign(scores.size(), 1);
      if (!lead.empty())
        m.front() = lead.front();
      m.back() = Sk;
      break;
    case MaskKind::PerBatchRow:
      m = scores;
      for (size_t d = 1; d < lead.size(); ++d)
        m[d] = 1;
      break;
    }
    return m;
  }
  std::string name() const {
    std::string n = "lead" + intsText(lead) + " S" + std::to_string(S) + " Sk" +
                    std::to_string(Sk) + " D" + std::to_string(D) + " Dv" + std::to_string(Dv) +
                    " mask" + intsText(maskShape()) + (causal ? " causal" : "") +
                    (bf16 ? " bf16" : "");
    return n;
  }
  static std::string intsText(const std::vector<int64_t> &v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i)
      s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
  }
};

Attrs attentionAttrs(const Problem &p) {
  Attrs a;
  a.f("scale", p.scale);
  if (p.causal)
    a.i("causal", 1);
  return a;
}

// Values of a float tensor (f32 or bf16) as doubles.
std::vector<double> valuesOf(const HostTensor &t) {
  const Tensor &v = t.view();
  std::vector<double> out(static_cast<size_t>(v.numel()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = v.dtype == program::F32 ? v.as<float>()[i]
                                     : toFloat(v.as<BFloat16>()[i]);
  return out;
}

// A tensor of `dtype` holding `values` (rounded to nearest even for bf16).
HostTensor tensorOf(DType dtype, const std::vector<int64_t> &shape,
                    const std::vector<float> &values) {
  HostTensor t(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == program::F32)
      t.view().as<float>()[i] = values[i];
    else
      t.view().as<BFloat16>()[i] = toBFloat16(values[i]);
  }
  return t;
}

struct Inputs {
  HostTensor q, k, v, mask;
  bool hasMask = false;
};

Inputs makeInputs(const Problem &p) {
  const DType dtype = p.bf16 ? program::BF16 : program::F32;
  Inputs in;
  in.q = tensorOf(dtype, p.shape(p.S, p.D),
                  randomFloats(p.batch() * p.S * p.D, -1.5f, 1.5f, p.seed));
  in.k = tensorOf(dtype, p.shape(p.Sk, p.D),
                  randomFloats(p.batch() * p.Sk * p.D, -1.5f, 1.5f, p.seed + 1));
  in.v = tensorOf(dtype, p.shape(p.Sk, p.Dv),
                  randomFloats(p.batch() * p.Sk * p.Dv, -2.0f, 2.0f, p.seed + 2));
  if (p.maskKind != MaskKind::None) {
    const std::vector<int64_t> shape = p.maskShape();
    std::vector<float> m = randomFloats(numelOf(shape), -1.0f, 1.0f, p.seed + 3);
    const std::vector<float> pick = randomFloats(numelOf(shape), 0.0f, 1.0f, p.seed + 4);
    const int64_t cols = shape.back();
    for (size_t i = 0; i < m.size(); ++i)
      if (cols > 1 && static_cast<int64_t>(i) % cols != 0 && pick[i] < p.minusInfFraction)
        m[i] = -std::numeric_limits<float>::infinity();
    in.mask = HostTensor::of<float>(shape, m);
    in.hasMask = true;
  }
  return in;
}

// The naive reference: scores in double, softmax (an all -inf row gives NaN probabilities, as
// the softmax kernel), out = p v, lse = log sum exp(s).
struct Reference {
  std::vector<double> probs; // [batch, S, Sk]
  std::vector<double> out, lse;
};

Reference reference(const Problem &p, const Inputs &in) {
  const std::vector<double> q = valuesOf(in.q), k = valuesOf(in.k), v = valuesOf(in.v);
  const std::vector<double> mask = in.hasMask ? valuesOf(in.mask) : std::vector<double>();
  const std::vector<int64_t> scoresShape = p.shape(p.S, p.Sk), maskShape = p.maskShape();
  const int64_t B = p.batch(), S = p.S, Sk = p.Sk, D = p.D, Dv = p.Dv;
  Reference r;
  r.probs.assign(B * S * Sk, 0.0);
  r.out.assign(B * S * Dv, 0.0);
  r.lse.assign(B * S, 0.0);
  std::vector<double> s(Sk);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < S; ++i) {
      double m = -kInf;
      for (int64_t j = 0; j < Sk; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < D; ++c)
          dot += q[(b * S + i) * D + c] * k[(b * Sk + j) * D + c];
        s[j] = static_cast<double>(p.scale) * dot;
        if (in.hasMask)
          s[j] += mask[broadcastSource(unravel((b * S + i) * Sk + j, scoresShape), maskShape)];
        if (p.causal && j > i + (Sk - S))
          s[j] = -kInf;
        m = std::max(m, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < Sk; ++j)
        sum += std::exp(s[j] - m);
      // log sum exp(s) = log 0 = -inf for an all -inf row (m + log(sum) would be NaN there).
      r.lse[b * S + i] = m == -kInf ? -kInf : m + std::log(sum);
      for (int64_t j = 0; j < Sk; ++j) {
        const double pr = std::exp(s[j] - m) / sum; // NaN for an all -inf row
        r.probs[(b * S + i) * Sk + j] = pr;
        for (int64_t c = 0; c < Dv; ++c)
          r.out[(b * S + i) * Dv + c] += pr * v[(b * Sk + j) * Dv + c];
      }
    }
  }
  return r;
}

// The analytic gradient for upstream gradient `dout`, with delta_i = dout_i . out_i from `out`
// (the kernel's forward output, as attention_grad reads it).
// Also the sums of the terms' magnitudes (|p| (|dp| + |delta|) |scale k| for dq, ...): the scale
// of the f32 rounding error of each gradient element, which is what a gradient that cancels to
// nearly 0 (e.g. dq and dk with a single key) is compared against.
struct ReferenceGrad {
  std::vector<double> dq, dk, dv;
  std::vector<double> dqTerms, dkTerms, dvTerms;
};

ReferenceGrad referenceGrad(const Problem &p, const Inputs &in, const Reference &ref,
                            const std::vector<double> &dout, const std::vector<double> &out) {
  const std::vector<double> q = valuesOf(in.q), k = valuesOf(in.k), v = valuesOf(in.v);
  const int64_t B = p.batch(), S = p.S, Sk = p.Sk, D = p.D, Dv = p.Dv;
  ReferenceGrad g;
  g.dq.assign(B * S * D, 0.0);
  g.dk.assign(B * Sk * D, 0.0);
  g.dv.assign(B * Sk * Dv, 0.0);
  g.dqTerms = g.dq;
  g.dkTerms = g.dk;
  g.dvTerms = g.dv;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < S; ++i) {
      double delta = 0;
      for (int64_t c = 0; c < Dv; ++c)
        delta += dout[(b * S + i) * Dv + c] * out[(b * S + i) * Dv + c];
      for (int64_t j = 0; j < Sk; ++j) {
        const double pr = ref.probs[(b * S + i) * Sk + j];
        double dp = 0;
        for (int64_t c = 0; c < Dv; ++c) {
          dp += dout[(b * S + i) * Dv + c] * v[(b * Sk + j) * Dv + c];
          g.dv[(b * Sk + j) * Dv + c] += pr * dout[(b * S + i) * Dv + c];
          g.dvTerms[(b * Sk + j) * Dv + c] += std::fabs(pr * dout[(b * S + i) * Dv + c]);
        }
        const double ds = pr * (dp - delta) * p.scale;
        const double dsTerms = std::fabs(pr * p.scale) * (std::fabs(dp) + std::fabs(delta));
        for (int64_t c = 0; c < D; ++c) {
          g.dq[(b * S + i) * D + c] += ds * k[(b * Sk + j) * D + c];
          g.dk[(b * Sk + j) * D + c] += ds * q[(b * S + i) * D + c];
          g.dqTerms[(b * S + i) * D + c] += dsTerms * std::fabs(k[(b * Sk + j) * D + c]);
          g.dkTerms[(b * Sk + j) * D + c] += dsTerms * std::fabs(q[(b * S + i) * D + c]);
        }
      }
    }
  }
  return g;
}

struct Forward {
  HostTensor out, lse;
};

Forward runAttention(const Problem &p, const Inputs &in) {
  const DType dtype = p.bf16 ? program::BF16 : program::F32;
  std::vector<int64_t> lseShape = p.lead;
  lseShape.push_back(p.S);
  Forward f{HostTensor(dtype, p.shape(p.S, p.Dv)), HostTensor(program::F32, lseShape)};
  Status st = runKernel("attention", {in.q, in.k, in.v, in.hasMask ? in.mask.view() : absent()},
                        {f.out, f.lse}, attentionAttrs(p));
  EXPECT_TRUE(st.isOk()) << p.name() << ": " << st.message();
  return f;
}

struct Backward {
  HostTensor dq, dk, dv;
};

Backward runAttentionGrad(const Problem &p, const Inputs &in, const Forward &f,
                          const HostTensor &dout) {
  const DType dtype = p.bf16 ? program::BF16 : program::F32;
  Backward g{HostTensor(dtype, p.shape(p.S, p.D)), HostTensor(dtype, p.shape(p.Sk, p.D)),
             HostTensor(dtype, p.shape(p.Sk, p.Dv))};
  Status st = runKernel("attention_grad",
                        {in.q, in.k, in.v, in.hasMask ? in.mask.view() : absent(), f.out, f.lse,
                         dout},
                        {g.dq, g.dk, g.dv}, attentionAttrs(p));
  EXPECT_TRUE(st.isOk()) << p.name() << ": " << st.message();
  return g;
}

// max |actual - expected| / max(max |expected|, 1e-30): the error relative to the magnitude of
// the tensor. NaN must match NaN (and counts as no error), -inf must match exactly.
// With `terms`, the magnitude is the largest of those sums of term magnitudes when larger.
double relativeError(const std::vector<double> &actual, const std::vector<double> &expected,
                     const std::string &what, const std::vector<double> &terms = {}) {
  EXPECT_EQ(actual.size(), expected.size()) << what;
  double magnitude = 0, worst = 0;
  for (double e : expected)
    if (std::isfinite(e))
      magnitude = std::max(magnitude, std::fabs(e));
  for (double t : terms)
    if (std::isfinite(t))
      magnitude = std::max(magnitude, t);
  for (size_t i = 0; i < actual.size() && i < expected.size(); ++i) {
    if (std::isnan(expected[i]) || std::isinf(expected[i])) {
      EXPECT_TRUE(std::isnan(expected[i]) ? std::isnan(actual[i]) : actual[i] == expected[i])
          << what << " at " << i << ": " << actual[i] << " vs " << expected[i];
      continue;
    }
    worst = std::max(worst, std::fabs(actual[i] - expected[i]) / std::max(magnitude, 1e-30));
  }
  return worst;
}

// Worst errors over a test's cases, printed at its end for the record.
struct WorstErrors {
  double out = 0, lse = 0, dq = 0, dk = 0, dv = 0;
  void print(const char *test) const {
    std::printf("[ errors   ] %s: out %.3g, lse %.3g, dq %.3g, dk %.3g, dv %.3g (relative to "
                "each tensor's max magnitude)\n",
                test, out, lse, dq, dk, dv);
  }
};

// Forward and backward against the reference; f32 tolerance `tol`.
void checkProblem(const Problem &p, double tol, double gradTol, WorstErrors *worst) {
  SCOPED_TRACE(p.name());
  const Inputs in = makeInputs(p);
  const Reference ref = reference(p, in);
  const Forward f = runAttention(p, in);
  const double outErr = relativeError(valuesOf(f.out), ref.out, "out");
  const double lseErr = relativeError(valuesOf(f.lse), ref.lse, "lse");
  EXPECT_LE(outErr, tol);
  EXPECT_LE(lseErr, tol);
  const DType dtype = p.bf16 ? program::BF16 : program::F32;
  const HostTensor dout = tensorOf(dtype, p.shape(p.S, p.Dv),
                                   randomFloats(p.batch() * p.S * p.Dv, -1, 1, p.seed + 9));
  const Backward g = runAttentionGrad(p, in, f, dout);
  const ReferenceGrad rg = referenceGrad(p, in, ref, valuesOf(dout), valuesOf(f.out));
  const double dqErr = relativeError(valuesOf(g.dq), rg.dq, "dq", rg.dqTerms);
  const double dkErr = relativeError(valuesOf(g.dk), rg.dk, "dk", rg.dkTerms);
  const double dvErr = relativeError(valuesOf(g.dv), rg.dv, "dv", rg.dvTerms);
  EXPECT_LE(dqErr, gradTol);
  EXPECT_LE(dkErr, gradTol);
  EXPECT_LE(dvErr, gradTol);
  worst->out = std::max(worst->out, outErr);
  worst->lse = std::max(worst->lse, lseErr);
  worst->dq = std::max(worst->dq, dqErr);
  worst->dk = std::max(worst->dk, dkErr);
  worst->dv = std::max(worst->dv, dvErr);
}

const std::vector<int64_t> kLengths = {1, 7, 64, 65, 130};
const std::vector<int64_t> kHeadDims = {1, 8, 33};
const std::vector<std::vector<int64_t>> kLeads = {{}, {3}, {2, 3}};

// Every S x Sk pair of kLengths, each head dim, the leading dims and mask layouts in turn.
TEST(Attention, MatchesReferenceOnOddShapesAndMasks) {
  WorstErrors worst;
  unsigned seed = 100;
  int n = 0;
  for (int64_t S : kLengths)
    for (int64_t Sk : kLengths)
      for (int64_t D : kHeadDims) {
        Problem p;
        p.lead = kLeads[n % kLeads.size()];
        p.S = S;
        p.Sk = Sk;
        p.D = D;
        p.Dv = D == 8 ? 5 : D + 3;
        p.maskKind = static_cast<MaskKind>((n / 3) % 4);
        p.scale = 1.0f / std::sqrt(static_cast<float>(D));
        p.seed = seed += 10;
        ++n;
        checkProblem(p, 1e-5, 1e-5, &worst);
      }
  worst.print("Attention.MatchesReferenceOnOddShapesAndMasks");
}

// Bottom-right aligned causal masking with S == Sk and S < Sk, alone and with a mask.
TEST(Attention, CausalMatchesReference) {
  WorstErrors worst;
  unsigned seed = 500;
  int n = 0;
  for (int64_t S : kLengths)
    for (int64_t Sk : kLengths) {
      if (S > Sk)
        continue;
      for (MaskKind mask : {MaskKind::None, MaskKind::QueryKey, MaskKind::KeyPadding,
                            MaskKind::PerBatchRow}) {
        Problem p;
        p.lead = kLeads[n % kLeads.size()];
        p.S = S;
        p.Sk = Sk;
        p.D = kHeadDims[n % kHeadDims.size()];
        p.Dv = p.D + 2;
        p.maskKind = mask;
        p.causal = true;
        p.seed = seed += 10;
        ++n;
        checkProblem(p, 1e-5, 1e-5, &worst);
      }
    }
  worst.print("Attention.CausalMatchesReference");
}

// A row whose scores are all -inf: the softmax kernel gives NaN for such a row, and so does
// attention (out NaN, lse -inf); its gradient is NaN as the unfused kernels' would be: NaN for
// that query's dq and, since the row's NaN probabilities multiply every key, for all of its
// batch's dk and dv. Other batches are unaffected. Causal with S > Sk hides every key from the
// first S - Sk queries in the same way.
TEST(Attention, FullyMaskedRowIsNaNAsInTheSoftmaxKernel) {
  const float minusInf = -std::numeric_limits<float>::infinity();
  // The softmax kernel on an all -inf row.
  HostTensor softmaxOut(program::F32, {3});
  ASSERT_KERNEL_OK(runKernel("softmax",
                             {HostTensor::of<float>({3}, {minusInf, minusInf, minusInf})},
                             {softmaxOut}, Attrs().i("axis", 0)));
  for (float y : softmaxOut.values<float>())
    EXPECT_TRUE(std::isnan(y));

  Problem p;
  p.lead = {2};
  p.S = 70;
  p.Sk = 67;
  p.D = 5;
  p.Dv = 4;
  p.maskKind = MaskKind::PerBatchRow; // [2, 70, 67]
  Inputs in = makeInputs(p);
  float *mask = in.mask.view().as<float>();
  const int64_t maskedRow = 66; // of batch 1, in the second query tile
  for (int64_t j = 0; j < p.Sk; ++j)
    mask[(1 * p.S + maskedRow) * p.Sk + j] = minusInf;
  const Reference ref = reference(p, in);
  const Forward f = runAttention(p, in);
  const std::vector<double> out = valuesOf(f.out), lse = valuesOf(f.lse);
  for (int64_t c = 0; c < p.Dv; ++c)
    EXPECT_TRUE(std::isnan(out[(1 * p.S + maskedRow) * p.Dv + c]));
  EXPECT_EQ(lse[1 * p.S + maskedRow], -kInf);
  EXPECT_LE(relativeError(out, ref.out, "out"), 1e-5);
  EXPECT_LE(relativeError(lse, ref.lse, "lse"), 1e-5);

  const HostTensor dout = tensorOf(program::F32, p.shape(p.S, p.Dv),
                                   randomFloats(p.batch() * p.S * p.Dv, -1, 1, 77));
  const Backward g = runAttentionGrad(p, in, f, dout);
  const ReferenceGrad rg = referenceGrad(p, in, ref, valuesOf(dout), out);
  const std::vector<double> dq = valuesOf(g.dq), dk = valuesOf(g.dk), dv = valuesOf(g.dv);
  EXPECT_TRUE(std::isnan(dq[(1 * p.S + maskedRow) * p.D]));
  EXPECT_TRUE(std::isnan(dk[(1 * p.Sk + 3) * p.D]));
  EXPECT_TRUE(std::isnan(dv[(1 * p.Sk + 3) * p.Dv]));
  EXPECT_FALSE(std::isnan(dk[3 * p.D])); // batch 0
  EXPECT_LE(relativeError(dq, rg.dq, "dq", rg.dqTerms), 1e-5);
  EXPECT_LE(relativeError(dk, rg.dk, "dk", rg.dkTerms), 1e-5);
  EXPECT_LE(relativeError(dv, rg.dv, "dv", rg.dvTerms), 1e-5);

  // Causal with S > Sk: queries 0 .. S - Sk - 1 see no key.
  Problem c;
  c.lead = {2};
  c.S = 9;
  c.Sk = 6;
  c.D = 3;
  c.Dv = 2;
  c.causal = true;
  const Inputs cin = makeInputs(c);
  const Reference cref = reference(c, cin);
  const Forward cf = runAttention(c, cin);
  const std::vector<double> cOut = valuesOf(cf.out), clse = valuesOf(cf.lse);
  for (int64_t i = 0; i < c.S; ++i)
    EXPECT_EQ(std::isnan(cOut[i * c.Dv]), i < c.S - c.Sk) << i;
  EXPECT_LE(relativeError(cOut, cref.out, "out"), 1e-5);
  EXPECT_LE(relativeError(clse, cref.lse, "lse"), 1e-5);
}

// Without keys the output is the empty sum (0) and lse = log 0 = -inf; dq is 0.
TEST(Attention, NoKeysGivesZeros) {
  Problem p;
  p.lead = {2};
  p.S = 3;
  p.Sk = 0;
  p.D = 4;
  p.Dv = 2;
  const Inputs in = makeInputs(p);
  const Forward f = runAttention(p, in);
  for (double o : valuesOf(f.out))
    EXPECT_EQ(o, 0.0);
  for (double l : valuesOf(f.lse))
    EXPECT_EQ(l, -kInf);
  const HostTensor dout = tensorOf(program::F32, p.shape(p.S, p.Dv),
                                   randomFloats(p.batch() * p.S * p.Dv, -1, 1, 3));
  const Backward g = runAttentionGrad(p, in, f, dout);
  for (double d : valuesOf(g.dq))
    EXPECT_EQ(d, 0.0);
}

// Central finite differences of L = sum(out * w) in each element of q, k and v (f32 kernel,
// step 1e-2): the analytic gradient attention_grad gives for dout = w.
TEST(AttentionGrad, MatchesFiniteDifferences) {
  for (bool causal : {false, true}) {
    Problem p;
    p.lead = {2};
    p.S = 5;
    p.Sk = 6;
    p.D = 3;
    p.Dv = 4;
    p.maskKind = MaskKind::QueryKey;
    p.causal = causal;
    p.seed = causal ? 41 : 31;
    SCOPED_TRACE(p.name());
    Inputs in = makeInputs(p);
    const std::vector<float> w = randomFloats(p.batch() * p.S * p.Dv, -1, 1, 5);
    const HostTensor dout = HostTensor::of<float>(p.shape(p.S, p.Dv), w);
    const Forward f = runAttention(p, in);
    const Backward g = runAttentionGrad(p, in, f, dout);
    auto loss = [&]() {
      const Forward fx = runAttention(p, in);
      const std::vector<double> out = valuesOf(fx.out);
      double l = 0;
      for (size_t i = 0; i < out.size(); ++i)
        l += out[i] * w[i];
      return l;
    };
    double worst = 0;
    for (auto [tensor, grad] : {std::pair<HostTensor *, const HostTensor *>{&in.q, &g.dq},
                                {&in.k, &g.dk},
                                {&in.v, &g.dv}}) {
      float *x = tensor->view().as<float>();
      const std::vector<double> analytic = valuesOf(*grad);
      double magnitude = 0;
      for (double a : analytic)
        magnitude = std::max(magnitude, std::fabs(a));
      for (int64_t e = 0; e < tensor->view().numel(); ++e) {
        const float saved = x[e];
        const float h = 1e-2f;
        x[e] = saved + h;
        const double up = loss();
        x[e] = saved - h;
        const double down = loss();
        x[e] = saved;
        const double numeric = (up - down) / (2.0 * h);
        worst = std::max(worst, std::fabs(numeric - analytic[e]) / magnitude);
        EXPECT_NEAR(analytic[e], numeric, 2e-3 * magnitude) << "element " << e;
      }
    }
    std::printf("[ errors   ] AttentionGrad.MatchesFiniteDifferences%s: %.3g (relative to the "
                "gradient's max magnitude)\n",
                causal ? " (causal)" : "", worst);
  }
}

// bf16 operands: the result is the f32-compute reference (from the bf16 values) within bf16
// rounding: |error| <= 2^-8 |expected| plus a small f32 share of the magnitude.
TEST(Attention, Bf16WithinBf16RoundingOfTheReference) {
  double worstOut = 0, worstGrad = 0;
  unsigned seed = 900;
  for (const auto &[S, Sk, D] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {7, 130, 8}, {65, 64, 33}, {130, 7, 1}, {64, 65, 8}}) {
    for (bool causal : {false, true}) {
      if (causal && S > Sk)
        continue;
      Problem p;
      p.lead = {2, 3};
      p.S = S;
      p.Sk = Sk;
      p.D = D;
      p.Dv = D + 1;
      p.maskKind = causal ? MaskKind::KeyPadding : MaskKind::PerBatchRow;
      p.causal = causal;
      p.bf16 = true;
      p.seed = seed += 10;
      SCOPED_TRACE(p.name());
      const Inputs in = makeInputs(p);
      const Reference ref = reference(p, in);
      const Forward f = runAttention(p, in);
      auto check = [](const std::vector<double> &actual, const std::vector<double> &expected,
                      double magnitudeShare, const char *what) {
        double magnitude = 0, worst = 0;
        for (double e : expected)
          magnitude = std::max(magnitude, std::fabs(e));
        for (size_t i = 0; i < actual.size(); ++i) {
          const double allowed = std::ldexp(std::fabs(expected[i]), -8) +
                                 magnitudeShare * magnitude;
          EXPECT_NEAR(actual[i], expected[i], allowed) << what << " at " << i;
          worst = std::max(worst, std::fabs(actual[i] - expected[i]) / allowed);
        }
        return worst;
      };
      worstOut = std::max(worstOut, check(valuesOf(f.out), ref.out, 1e-5, "out"));
      EXPECT_LE(relativeError(valuesOf(f.lse), ref.lse, "lse"), 1e-5);
      const HostTensor dout = tensorOf(program::BF16, p.shape(p.S, p.Dv),
                                       randomFloats(p.batch() * p.S * p.Dv, -1, 1, p.seed + 9));
      const Backward g = runAttentionGrad(p, in, f, dout);
      const ReferenceGrad rg = referenceGrad(p, in, ref, valuesOf(dout), valuesOf(f.out));
      worstGrad = std::max(worstGrad, check(valuesOf(g.dq), rg.dq, 1e-4, "dq"));
      worstGrad = std::max(worstGrad, check(valuesOf(g.dk), rg.dk, 1e-4, "dk"));
      worstGrad = std::max(worstGrad, check(valuesOf(g.dv), rg.dv, 1e-4, "dv"));
    }
  }
  std::printf("[ errors   ] Attention.Bf16WithinBf16RoundingOfTheReference: worst error as a "
              "fraction of the allowed 2^-8 |expected| + share * max|expected|: out %.3g, "
              "gradients %.3g\n",
              worstOut, worstGrad);
}

// ---- dropout: the unfused softmax -> dropout -> matmul ----------------------------------------

struct DropoutSetup {
  int64_t seed = 0x5eed, step = 7, stream = 3;
  float ratio = 0.3f;
  Attrs blockAttrs; // global_shape etc. (none: the probabilities are the whole tensor)
  bool hasBlock = false;
};

Attrs withDropout(const Problem &p, const DropoutSetup &d) {
  Attrs a = d.hasBlock ? d.blockAttrs : Attrs();
  a.f("scale", p.scale).f("dropout_ratio", d.ratio).i("stream", d.stream);
  if (p.causal)
    a.i("causal", 1);
  return a;
}

// f32 scores s = scale q kᵀ + mask (-inf where causal hides a key), from the double reference.
std::vector<float> scoresOf(const Problem &p, const Inputs &in) {
  const std::vector<double> q = valuesOf(in.q), k = valuesOf(in.k);
  const std::vector<double> mask = in.hasMask ? valuesOf(in.mask) : std::vector<double>();
  const std::vector<int64_t> scoresShape = p.shape(p.S, p.Sk), maskShape = p.maskShape();
  std::vector<float> s(static_cast<size_t>(p.batch() * p.S * p.Sk));
  for (int64_t e = 0; e < static_cast<int64_t>(s.size()); ++e) {
    const int64_t b = e / (p.S * p.Sk), i = e / p.Sk % p.S, j = e % p.Sk;
    double dot = 0;
    for (int64_t c = 0; c < p.D; ++c)
      dot += q[(b * p.S + i) * p.D + c] * k[(b * p.Sk + j) * p.D + c];
    double v = static_cast<double>(p.scale) * dot;
    if (in.hasMask)
      v += mask[broadcastSource(unravel(e, scoresShape), maskShape)];
    if (p.causal && j > i + (p.Sk - p.S))
      v = -kInf;
    s[static_cast<size_t>(e)] = static_cast<float>(v);
  }
  return s;
}

// Fused attention (and attention_grad) with dropout against the unfused kernels: softmax, then
// dropout (the same seed, step, stream and block attributes) over the probabilities, then
// matmul; the backward against matmul's and dropout's backward (in double), softmax_grad, and
// the products with k and q (in double).
void checkDropoutComposition(const Problem &p, const DropoutSetup &d, WorstErrors *worst) {
  SCOPED_TRACE(p.name());
  const Inputs in = makeInputs(p);
  const std::vector<int64_t> scoresShape = p.shape(p.S, p.Sk);
  const int64_t axis = static_cast<int64_t>(scoresShape.size()) - 1;
  const HostTensor seed = HostTensor::scalar<int64_t>(d.seed);
  const HostTensor step = HostTensor::scalar<int64_t>(d.step);
  // The unfused forward.
  const HostTensor scores = HostTensor::of<float>(scoresShape, scoresOf(p, in));
  HostTensor probs(program::F32, scoresShape), dropped(program::F32, scoresShape);
  HostTensor keep(program::BOOL, scoresShape), unfusedOut(program::F32, p.shape(p.S, p.Dv));
  ASSERT_KERNEL_OK(runKernel("softmax", {scores}, {probs}, Attrs().i("axis", axis)));
  Attrs dropoutAttrs = d.hasBlock ? d.blockAttrs : Attrs();
  dropoutAttrs.f("ratio", d.ratio).i("stream", d.stream);
  ASSERT_KERNEL_OK(runKernel("dropout", {probs, seed, step}, {dropped, keep}, dropoutAttrs));
  ASSERT_KERNEL_OK(runKernel("matmul", {dropped, in.v}, {unfusedOut}));
  // The fused one.
  std::vector<int64_t> lseShape = p.lead;
  lseShape.push_back(p.S);
  HostTensor out(program::F32, p.shape(p.S, p.Dv)), lse(program::F32, lseShape);
  const Tensor mask = in.hasMask ? in.mask.view() : absent();
  ASSERT_KERNEL_OK(runKernel("attention", {in.q, in.k, in.v, mask, seed, step}, {out, lse},
                             withDropout(p, d)));
  const double outErr = relativeError(valuesOf(out), valuesOf(unfusedOut), "out");
  EXPECT_LE(outErr, 1e-6);
  worst->out = std::max(worst->out, outErr);

  // The unfused backward for dout.
  const int64_t B = p.batch(), S = p.S, Sk = p.Sk, D = p.D, Dv = p.Dv;
  const std::vector<float> doutValues = randomFloats(B * S * Dv, -1, 1, p.seed + 9);
  const HostTensor dout = HostTensor::of<float>(p.shape(S, Dv), doutValues);
  const std::vector<double> v = valuesOf(in.v), q = valuesOf(in.q), k = valuesOf(in.k);
  const std::vector<double> droppedValues = valuesOf(dropped);
  const std::vector<uint8_t> kept = keep.values<uint8_t>();
  const float dropScale = 1.0f / (1.0f - d.ratio);
  std::vector<float> dprobs(static_cast<size_t>(B * S * Sk));
  ReferenceGrad expected;
  expected.dv.assign(B * Sk * Dv, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < Sk; ++j) {
        const int64_t e = (b * S + i) * Sk + j;
        double ddropped = 0; // d loss / d dropped = dout vᵀ
        for (int64_t c = 0; c < Dv; ++c) {
          ddropped += doutValues[(b * S + i) * Dv + c] * v[(b * Sk + j) * Dv + c];
          expected.dv[(b * Sk + j) * Dv + c] +=
              droppedValues[e] * doutValues[(b * S + i) * Dv + c];
        }
        dprobs[e] = static_cast<float>(ddropped * (kept[e] ? dropScale : 0.0f));
      }
  HostTensor dscores(program::F32, scoresShape);
  ASSERT_KERNEL_OK(runKernel("softmax_grad", {HostTensor::of<float>(scoresShape, dprobs), probs},
                             {dscores}, Attrs().i("axis", axis)));
  const std::vector<double> ds = valuesOf(dscores);
  expected.dq.assign(B * S * D, 0.0);
  expected.dk.assign(B * Sk * D, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < Sk; ++j)
        for (int64_t c = 0; c < D; ++c) {
          const double g = p.scale * ds[(b * S + i) * Sk + j];
          expected.dq[(b * S + i) * D + c] += g * k[(b * Sk + j) * D + c];
          expected.dk[(b * Sk + j) * D + c] += g * q[(b * S + i) * D + c];
        }
  Backward g{HostTensor(program::F32, p.shape(S, D)), HostTensor(program::F32, p.shape(Sk, D)),
             HostTensor(program::F32, p.shape(Sk, Dv))};
  ASSERT_KERNEL_OK(runKernel("attention_grad",
                             {in.q, in.k, in.v, mask, out, lse, dout, seed, step},
                             {g.dq, g.dk, g.dv}, withDropout(p, d)));
  const double dqErr = relativeError(valuesOf(g.dq), expected.dq, "dq");
  const double dkErr = relativeError(valuesOf(g.dk), expected.dk, "dk");
  const double dvErr = relativeError(valuesOf(g.dv), expected.dv, "dv");
  EXPECT_LE(dqErr, 1e-6);
  EXPECT_LE(dkErr, 1e-6);
  EXPECT_LE(dvErr, 1e-6);
  worst->dq = std::max(worst->dq, dqErr);
  worst->dk = std::max(worst->dk, dkErr);
  worst->dv = std::max(worst->dv, dvErr);
  // Some probabilities were dropped and some kept.
  int64_t keptCount = 0;
  for (uint8_t x : kept)
    keptCount += x;
  if (kept.size() >= 50) {
    EXPECT_GT(keptCount, 0);
    EXPECT_LT(keptCount, static_cast<int64_t>(kept.size()));
  }
}

TEST(AttentionDropout, EqualsSoftmaxDropoutMatmulOfTheUnfusedKernels) {
  WorstErrors worst;
  unsigned seed = 2000;
  int n = 0;
  for (const auto &[S, Sk, D] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 7, 8}, {7, 130, 33}, {65, 64, 1}, {130, 65, 8}, {64, 64, 33}}) {
    for (bool causal : {false, true}) {
      if (causal && S > Sk)
        continue;
      Problem p;
      p.lead = kLeads[n % kLeads.size()];
      p.S = S;
      p.Sk = Sk;
      p.D = D;
      p.Dv = D + 2;
      p.maskKind = static_cast<MaskKind>(n % 4);
      p.causal = causal;
      p.seed = seed += 10;
      ++n;
      checkDropoutComposition(p, DropoutSetup(), &worst);
    }
  }
  worst.print("AttentionDropout.EqualsSoftmaxDropoutMatmulOfTheUnfusedKernels");
}

// A block of the whole probability tensor (data parallel along the batch, sequence parallel
// along the queries): the mask is the whole tensor's at the block's offsets, as the dropout
// kernel draws it with the same attributes.
TEST(AttentionDropout, BlockOfTheWholeTensorDrawsTheDropoutKernelsMask) {
  WorstErrors worst;
  Problem p;
  p.lead = {2, 3};
  p.S = 65;
  p.Sk = 70;
  p.D = 8;
  p.Dv = 6;
  p.maskKind = MaskKind::KeyPadding;
  p.seed = 3000;
  DropoutSetup d;
  d.hasBlock = true;
  d.blockAttrs.ints("global_shape", {6, 3, 200, 70})
      .i("split_dim", 0)
      .i("split_offset", 4)
      .i("block_dim", 2)
      .i("block_offset", 130);
  checkDropoutComposition(p, d, &worst);
  // The key dim cut too (block_dim on the last dim).
  DropoutSetup keys;
  keys.hasBlock = true;
  keys.blockAttrs.ints("global_shape", {2, 3, 65, 140}).i("block_dim", 3).i("block_offset", 70);
  checkDropoutComposition(p, keys, &worst);
  worst.print("AttentionDropout.BlockOfTheWholeTensorDrawsTheDropoutKernelsMask");
}

TEST(AttentionDropout, BadDropoutOperandsAndAttributesAreNamed) {
  HostTensor q(program::F32, {3, 4}), k(program::F32, {5, 4}), v(program::F32, {5, 6});
  HostTensor out(program::F32, {3, 6}), lse(program::F32, {3});
  const HostTensor seed = HostTensor::scalar<int64_t>(1), step = HostTensor::scalar<int64_t>(2);
  const Attrs good = Attrs().f("scale", 1).f("dropout_ratio", 0.1f).i("stream", 0);
  EXPECT_KERNEL_ERROR(runKernel("attention", {q, k, v, absent(), seed}, {out, lse}, good),
                      "attention: step (input 5) is required with seed");
  EXPECT_KERNEL_ERROR(
      runKernel("attention", {q, k, v, absent(), seed, step}, {out, lse},
                Attrs().f("scale", 1).f("dropout_ratio", 1.0f).i("stream", 0)),
      "attention: dropout_ratio must be in [0, 1), got 1.000000");
  EXPECT_KERNEL_ERROR(runKernel("attention", {q, k, v, absent(), seed, step}, {out, lse},
                                Attrs().f("scale", 1).f("dropout_ratio", 0.1f)),
                      "attention: missing attribute 'stream'");
  EXPECT_KERNEL_ERROR(runKernel("attention", {q, k, v}, {out, lse},
                                Attrs().f("scale", 1).f("dropout_ratio", 0.1f)),
                      "attention: attribute 'dropout_ratio' needs the seed and step inputs");
  const HostTensor seed32 = HostTensor::scalar<int32_t>(1);
  EXPECT_KERNEL_ERROR(runKernel("attention", {q, k, v, absent(), seed32, step}, {out, lse}, good),
                      "attention: seed is i32, expected i64");
  Attrs block = good;
  block.ints("global_shape", {3, 5}).i("split_dim", 0).i("split_offset", 1);
  EXPECT_KERNEL_ERROR(runKernel("attention", {q, k, v, absent(), seed, step}, {out, lse}, block),
                      "attention: the probability tensor [3x5] is not a block at offsets [1, 0]");
  const HostTensor badStep = HostTensor::scalar<int64_t>(-1);
  EXPECT_KERNEL_ERROR(
      runKernel("attention", {q, k, v, absent(), seed, badStep}, {out, lse}, good),
      "attention: dropout: step -1 is outside [0, 2^32 - 1]");
}

// ---- malformed calls: one-line errors naming the operand -------------------------------------

struct BadCall {
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
};

TEST(AttentionErrors, WrongRankNamesTheOperand) {
  HostTensor q(program::F32, {4}), k(program::F32, {2, 3, 4}), v(program::F32, {2, 3, 4});
  HostTensor out(program::F32, {2, 3, 4}), lse(program::F32, {2, 3});
  EXPECT_KERNEL_ERROR(runKernel("attention", {q, k, v}, {out, lse}, Attrs().f("scale", 1)),
                      "attention: q has shape [4], expected rank >= 2 ([..., S, D])");
}

TEST(AttentionErrors, MismatchedShapesNameTheOperand) {
  HostTensor q(program::F32, {2, 3, 4}), k(program::F32, {2, 5, 3}), v(program::F32, {2, 5, 6});
  HostTensor out(program::F32, {2, 3, 6}), lse(program::F32, {2, 3});
  EXPECT_KERNEL_ERROR(runKernel("attention", {q, k, v}, {out, lse}, Attrs().f("scale", 1)),
                      "attention: k has shape [2x5x3], expected [2x5x4]");
  HostTensor k2(program::F32, {3, 5, 4}); // other leading dims
  EXPECT_KERNEL_ERROR(runKernel("attention", {q, k2, v}, {out, lse}, Attrs().f("scale", 1)),
                      "attention: k has shape [3x5x4], expected [2x5x4]");
  HostTensor k3(program::F32, {2, 5, 4}), v3(program::F32, {2, 4, 6});
  EXPECT_KERNEL_ERROR(runKernel("attention", {q, k3, v3}, {out, lse}, Attrs().f("scale", 1)),
                      "attention: v has shape [2x4x6], expected [2x5x6]");
  HostTensor out2(program::F32, {2, 3, 4});
  EXPECT_KERNEL_ERROR(runKernel("attention", {q, k3, v}, {out2, lse}, Attrs().f("scale", 1)),
                      "attention: out has shape [2x3x4], expected [2x3x6]");
}

TEST(AttentionErrors, WrongDtypesNameTheOperand) {
  HostTensor q(program::I64, {3, 4}), k(program::F32, {5, 4}), v(program::F32, {5, 6});
  HostTensor out(program::F32, {3, 6}), lse(program::F32, {3});
  EXPECT_KERNEL_ERROR(runKernel("attention", {q, k, v}, {out, lse}, Attrs().f("scale", 1)),
                      "attention: q is i64, expected f32 or bf16");
  HostTensor qf(program::F32, {3, 4}), vb(program::BF16, {5, 6});
  EXPECT_KERNEL_ERROR(runKernel("attention", {qf, k, vb}, {out, lse}, Attrs().f("scale", 1)),
                      "attention: v is bf16 but q is f32, expected the same dtype");
  HostTensor lse16(program::BF16, {3});
  EXPECT_KERNEL_ERROR(runKernel("attention", {qf, k, v}, {out, lse16}, Attrs().f("scale", 1)),
                      "attention: lse is bf16, expected f32");
  HostTensor maskI(program::I32, {3, 5});
  EXPECT_KERNEL_ERROR(
      runKernel("attention", {qf, k, v, maskI}, {out, lse}, Attrs().f("scale", 1)),
      "attention: mask is i32, expected f32");
}

TEST(AttentionErrors, MaskThatDoesNotBroadcastNamesTheMask) {
  HostTensor q(program::F32, {2, 3, 4}), k(program::F32, {2, 5, 4}), v(program::F32, {2, 5, 6});
  HostTensor out(program::F32, {2, 3, 6}), lse(program::F32, {2, 3});
  HostTensor mask(program::F32, {3, 4});
  EXPECT_KERNEL_ERROR(
      runKernel("attention", {q, k, v, mask}, {out, lse}, Attrs().f("scale", 1)),
      "attention: mask has shape [3x4], which does not broadcast to the scores' shape [2x3x5]");
  HostTensor tooLong(program::F32, {1, 2, 3, 5});
  EXPECT_KERNEL_ERROR(
      runKernel("attention", {q, k, v, tooLong}, {out, lse}, Attrs().f("scale", 1)),
      "attention: mask has shape [1x2x3x5], which does not broadcast");
}

TEST(AttentionErrors, MissingOrBadAttributesAreNamed) {
  HostTensor q(program::F32, {3, 4}), k(program::F32, {5, 4}), v(program::F32, {5, 6});
  HostTensor out(program::F32, {3, 6}), lse(program::F32, {3});
  EXPECT_KERNEL_ERROR(runKernel("attention", {q, k, v}, {out, lse}, Attrs()),
                      "attention: missing attribute 'scale'");
  EXPECT_KERNEL_ERROR(
      runKernel("attention", {q, k, v}, {out, lse}, Attrs().f("scale", 1).i("causal", 2)),
      "attention: attribute 'causal' must be 0 or 1, got 2");
}

TEST(AttentionErrors, GradNamesItsOperands) {
  HostTensor q(program::F32, {3, 4}), k(program::F32, {5, 4}), v(program::F32, {5, 6});
  HostTensor out(program::F32, {3, 6}), lse(program::F32, {3}), dout(program::F32, {3, 6});
  HostTensor dq(program::F32, {3, 4}), dk(program::F32, {5, 4}), dv(program::F32, {5, 6});
  const Attrs attrs = Attrs().f("scale", 1);
  EXPECT_KERNEL_ERROR(
      runKernel("attention_grad", {q, k, v, absent(), out, lse}, {dq, dk, dv}, attrs),
      "attention_grad: dout (input 6) is required but absent");
  HostTensor lse2(program::F32, {3, 1});
  EXPECT_KERNEL_ERROR(
      runKernel("attention_grad", {q, k, v, absent(), out, lse2, dout}, {dq, dk, dv}, attrs),
      "attention_grad: lse has shape [3x1], expected [3]");
  HostTensor dv2(program::F32, {5, 4});
  EXPECT_KERNEL_ERROR(
      runKernel("attention_grad", {q, k, v, absent(), out, lse, dout}, {dq, dk, dv2}, attrs),
      "attention_grad: dv has shape [5x4], expected [5x6]");
  EXPECT_KERNEL_ERROR(
      runKernel("attention_grad", {q, k, v, absent(), out, lse, dout}, {dq, dk, dv}, Attrs()),
      "attention_grad: missing attribute 'scale'");
}

// ---- workspace -----------------------------------------------------------------------------

uint64_t workspaceBytes(const char *kernel, DType dtype, std::vector<int64_t> lead, int64_t S,
                        int64_t Sk, int64_t D, int64_t Dv) {
  auto shape = [&](int64_t rows, int64_t cols) {
    std::vector<int64_t> s = lead;
    s.push_back(rows);
    s.push_back(cols);
    return s;
  };
  std::vector<int64_t> lseShape = lead;
  lseShape.push_back(S);
  KernelArgs args;
  args.inputs = {typeOnlyTensor(dtype, shape(S, D)), typeOnlyTensor(dtype, shape(Sk, D)),
                 typeOnlyTensor(dtype, shape(Sk, Dv)), Tensor()};
  if (std::string(kernel) == "attention") {
    args.outputs = {typeOnlyTensor(dtype, shape(S, Dv)), typeOnlyTensor(program::F32, lseShape)};
  } else {
    args.inputs.push_back(typeOnlyTensor(dtype, shape(S, Dv)));
    args.inputs.push_back(typeOnlyTensor(program::F32, lseShape));
    args.inputs.push_back(typeOnlyTensor(dtype, shape(S, Dv)));
    args.outputs = {typeOnlyTensor(dtype, shape(S, D)), typeOnlyTensor(dtype, shape(Sk, D)),
                    typeOnlyTensor(dtype, shape(Sk, Dv))};
  }
  Attrs attrs = Attrs().f("scale", 1);
  args.attrs = &attrs.map();
  uint64_t bytes = 0;
  Status st = cpuKernelWorkspaceBytes(kernel, args, &bytes);
  EXPECT_TRUE(st.isOk()) << st.message();
  return bytes;
}

// The workspace does not depend on B * H at all, nor on S * Sk: the forward's and the f32
// backward's are one tile's whatever the lengths; the bf16 backward adds f32 dk and dv
// accumulators of one batch, linear in Sk.
TEST(AttentionWorkspace, IndependentOfBatchAndAtMostLinearInTheLengths) {
  for (const char *kernel : {"attention", "attention_grad"}) {
    for (DType dtype : {program::F32, program::BF16}) {
      SCOPED_TRACE(std::string(kernel) + " " + dtypeName(dtype));
      const uint64_t small = workspaceBytes(kernel, dtype, {1}, 512, 512, 64, 64);
      EXPECT_EQ(workspaceBytes(kernel, dtype, {16, 32}, 512, 512, 64, 64), small);
      EXPECT_EQ(workspaceBytes(kernel, dtype, {}, 512, 512, 64, 64), small);
      const uint64_t longQueries = workspaceBytes(kernel, dtype, {1}, 8192, 512, 64, 64);
      EXPECT_EQ(longQueries, small);
      const uint64_t longKeys = workspaceBytes(kernel, dtype, {1}, 512, 8192, 64, 64);
      if (std::string(kernel) == "attention_grad" && dtype == program::BF16) {
        // dk and dv accumulators: (8192 - 512) * (64 + 64) floats more.
        EXPECT_EQ(longKeys - small, (8192 - 512) * (64 + 64) * 4u);
      } else {
        EXPECT_EQ(longKeys, small);
      }
      // Far below one S x Sk matrix of f32.
      const uint64_t longBoth = workspaceBytes(kernel, dtype, {1}, 8192, 8192, 64, 64);
      EXPECT_EQ(longBoth, longKeys);
      EXPECT_LT(longBoth, 8192u * 8192u * 4u / 16u);
    }
  }
}

// Given one byte less than it asks for, the kernel reports it and writes nothing past the end.
TEST(AttentionWorkspace, TooSmallIsAnErrorAndNothingIsWrittenPastIt) {
  for (const char *kernel : {"attention", "attention_grad"}) {
    SCOPED_TRACE(kernel);
    Problem p;
    p.lead = {2};
    p.S = 70;
    p.Sk = 66;
    p.D = 8;
    p.Dv = 5;
    p.bf16 = true;
    const Inputs in = makeInputs(p);
    Forward f = runAttention(p, in);
    const HostTensor dout = tensorOf(program::BF16, p.shape(p.S, p.Dv),
                                     randomFloats(p.batch() * p.S * p.Dv, -1, 1, 8));
    Backward g{HostTensor(program::BF16, p.shape(p.S, p.D)),
               HostTensor(program::BF16, p.shape(p.Sk, p.D)),
               HostTensor(program::BF16, p.shape(p.Sk, p.Dv))};
    HostTensor out2(program::BF16, p.shape(p.S, p.Dv)), lse2(program::F32, {2, p.S});
    KernelArgs args;
    const bool forward = std::string(kernel) == "attention";
    args.inputs = {in.q, in.k, in.v, absent()};
    if (forward) {
      args.outputs = {out2, lse2};
    } else {
      args.inputs.insert(args.inputs.end(), {f.out, f.lse, dout});
      args.outputs = {g.dq, g.dk, g.dv};
    }
    const Attrs attrs = attentionAttrs(p);
    args.attrs = &attrs.map();
    uint64_t need = 0;
    ASSERT_KERNEL_OK(cpuKernelWorkspaceBytes(kernel, args, &need));
    ASSERT_GT(need, 0u);
    // The workspace is followed by guard bytes that must stay untouched.
    constexpr size_t kGuard = 4096;
    std::vector<uint64_t> storage((need + kGuard) / 8 + 8, 0);
    uint8_t *base = reinterpret_cast<uint8_t *>(storage.data());
    base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
    std::fill(base, base + need + kGuard, uint8_t{0xCD});
    args.workspace = base;
    args.workspaceBytes = need - 1;
    EXPECT_KERNEL_ERROR(findCpuKernel(kernel)(args),
                        std::string(kernel) + ": needs at least " + std::to_string(need) +
                            " bytes of workspace");
    for (size_t i = need - 1; i < need + kGuard; ++i)
      ASSERT_EQ(base[i], 0xCD) << "byte " << i << " past the workspace was written";
  }
}

} // namespace
} // namespace shardc::runtime::testing
