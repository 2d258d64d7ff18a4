// Burn 0.23's attention leaves: Module.Attention's causal alignment, AttentionWithLogsumexp and
// AttentionBackward. Expected values come from plain loops in double written from Burn's
// definitions (burn-backend-0.23.0-pre.1 src/backend/ops/modules/attention.rs), independently of
// the lowering; the gradients also from central finite differences of the loop forward.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;
using K = OpKind;
using Vec = std::vector<double>;
using I64 = std::int64_t;
using Id = std::uint64_t;

constexpr double kInf = std::numeric_limits<double>::infinity();
// The logsumexp of a query that sees no key (Burn's clamped max + log(clamped sum), in f32).
constexpr double kF32Lowest = std::numeric_limits<float>::lowest();

Dims dims4(I64 a, I64 b, I64 c, I64 d) {
  return {static_cast<std::uint64_t>(a), static_cast<std::uint64_t>(b),
          static_cast<std::uint64_t>(c), static_cast<std::uint64_t>(d)};
}

// Shapes: query [b, h, sq, d], key [b, kvh, sk, d], value [b, kvh, sk, dv].
struct Cfg {
  I64 b, h, kvh, sq, sk, d, dv;
  std::size_t nq() const { return b * h * sq * d; }
  std::size_t nk() const { return b * kvh * sk * d; }
  std::size_t nv() const { return b * kvh * sk * dv; }
  std::size_t nout() const { return b * h * sq * dv; }
};
struct Opts {
  std::optional<double> scale, softcap;
  bool causal = false, top_left = false;
};
AttentionOptionsIr ir_options(const Opts& o) {
  AttentionOptionsIr r{};
  if (o.scale) r.scale = ScalarIr::f(*o.scale);
  if (o.softcap) r.softcap = ScalarIr::f(*o.softcap);
  r.is_causal = o.causal;
  r.causal_alignment = o.top_left ? CausalAlignment::TopLeft : CausalAlignment::BottomRight;
  return r;
}
// The 12 combinations of scale (given / default), softcap (on / off) and causality (none,
// bottom-right, top-left).
Opts variant(int i) {
  Opts o;
  if (i & 1) o.scale = 0.7;
  if (i & 2) o.softcap = 1.5;
  o.causal = i / 4 > 0;
  o.top_left = i / 4 == 2;
  return o;
}

// One query row of scores: q_i k_j^T * scale, capped, masked (mask/bias are [b, h, sq, sk]),
// causal j > i + offset, + bias. `prod` gets the scaled products before the cap.
struct Row {
  Vec prod, s;
  double mx = -kInf;
};
Row score_row(const Cfg& c, const Opts& o, const Vec& q, const Vec& k, I64 bi, I64 hi, I64 i,
              const Vec* mask = nullptr, const Vec* bias = nullptr) {
  const double sc = o.scale ? *o.scale : 1.0 / std::sqrt(static_cast<double>(c.d));
  const I64 offset = o.top_left ? 0 : c.sk - c.sq, kv = hi / (c.h / c.kvh);
  Row r{Vec(c.sk), Vec(c.sk)};
  for (I64 j = 0; j < c.sk; ++j) {
    double acc = 0;
    for (I64 e = 0; e < c.d; ++e)
      acc +=
          q[((bi * c.h + hi) * c.sq + i) * c.d + e] * k[((bi * c.kvh + kv) * c.sk + j) * c.d + e];
    r.prod[j] = acc * sc;
    double s = o.softcap ? *o.softcap * std::tanh(r.prod[j] / *o.softcap) : r.prod[j];
    const I64 mi = ((bi * c.h + hi) * c.sq + i) * c.sk + j;
    if (mask && (*mask)[mi] != 0) s = -kInf;
    if (o.causal && j > i + offset) s = -kInf;
    if (bias) s += (*bias)[mi];
    r.s[j] = s;
    r.mx = std::max(r.mx, s);
  }
  return r;
}

struct Attn {
  Vec out, lse;
};
Attn ref_forward(const Cfg& c, const Opts& o, const Vec& q, const Vec& k, const Vec& v,
                 const Vec* mask = nullptr, const Vec* bias = nullptr) {
  Attn r{Vec(c.nout(), 0.0), Vec(c.b * c.h * c.sq, kF32Lowest)};
  for (I64 bi = 0; bi < c.b; ++bi)
    for (I64 hi = 0; hi < c.h; ++hi)
      for (I64 i = 0; i < c.sq; ++i) {
        const auto row = score_row(c, o, q, k, bi, hi, i, mask, bias);
        if (row.mx == -kInf) continue;  // sees no key: out 0
        double sum = 0;
        for (double s : row.s) sum += std::exp(s - row.mx);
        const I64 qi = (bi * c.h + hi) * c.sq + i, kv = hi / (c.h / c.kvh);
        r.lse[qi] = row.mx + std::log(sum);
        for (I64 j = 0; j < c.sk; ++j)
          for (I64 e = 0; e < c.dv; ++e)
            r.out[qi * c.dv + e] +=
                std::exp(row.s[j] - row.mx) / sum * v[((bi * c.kvh + kv) * c.sk + j) * c.dv + e];
      }
  return r;
}

// Gradients of L = sum(out * dout) against q, k, v.
using Grads = std::array<Vec, 3>;
// Analytically, through the softmax's Jacobian: dS_j = p_j (dP_j - sum_l p_l dP_l).
Grads ref_backward(const Cfg& c, const Opts& o, const Vec& q, const Vec& k, const Vec& v,
                   const Vec& dout) {
  const double sc = o.scale ? *o.scale : 1.0 / std::sqrt(static_cast<double>(c.d));
  Grads g{Vec(c.nq(), 0.0), Vec(c.nk(), 0.0), Vec(c.nv(), 0.0)};
  for (I64 bi = 0; bi < c.b; ++bi)
    for (I64 hi = 0; hi < c.h; ++hi)
      for (I64 i = 0; i < c.sq; ++i) {
        const auto row = score_row(c, o, q, k, bi, hi, i);
        if (row.mx == -kInf) continue;  // out is constant 0 there
        const I64 qi = (bi * c.h + hi) * c.sq + i, kv = hi / (c.h / c.kvh);
        Vec p(c.sk), dp(c.sk, 0.0);
        double sum = 0, pdp = 0;
        for (I64 j = 0; j < c.sk; ++j) sum += (p[j] = std::exp(row.s[j] - row.mx));
        for (I64 j = 0; j < c.sk; ++j) {
          p[j] /= sum;
          for (I64 e = 0; e < c.dv; ++e)
            dp[j] += dout[qi * c.dv + e] * v[((bi * c.kvh + kv) * c.sk + j) * c.dv + e];
          pdp += p[j] * dp[j];
        }
        for (I64 j = 0; j < c.sk; ++j) {
          double ds = p[j] * (dp[j] - pdp) * sc;
          if (o.softcap) ds *= 1 - std::pow(std::tanh(row.prod[j] / *o.softcap), 2);
          const I64 kj = (bi * c.kvh + kv) * c.sk + j;
          for (I64 e = 0; e < c.d; ++e) {
            g[0][qi * c.d + e] += ds * k[kj * c.d + e];
            g[1][kj * c.d + e] += ds * q[qi * c.d + e];
          }
          for (I64 e = 0; e < c.dv; ++e) g[2][kj * c.dv + e] += p[j] * dout[qi * c.dv + e];
        }
      }
  return g;
}
// By central differences of ref_forward.
Grads fd_backward(const Cfg& c, const Opts& o, const Vec& q, const Vec& k, const Vec& v,
                  const Vec& dout) {
  const double h = 1e-5;
  Grads x{q, k, v}, g;
  for (int w = 0; w < 3; ++w) {
    g[w].resize(x[w].size());
    for (std::size_t i = 0; i < x[w].size(); ++i) {
      const double x0 = x[w][i];
      x[w][i] = x0 + h;
      const double up = dot(ref_forward(c, o, x[0], x[1], x[2]).out, dout);
      x[w][i] = x0 - h;
      const double down = dot(ref_forward(c, o, x[0], x[1], x[2]).out, dout);
      x[w][i] = x0;
      g[w][i] = (up - down) / (2 * h);
    }
  }
  return g;
}

class AttentionTest : public OpTest {
 protected:
  static TensorIr t4(Id id, I64 a, I64 b, I64 c, I64 d, DType t) {
    return tir(id, dims4(a, b, c, d), t);
  }
  // query, key, value, out (or out_grad) and logsumexp tensors of `c`.
  static TensorIr qt(const Cfg& c, Id id, DType t) { return t4(id, c.b, c.h, c.sq, c.d, t); }
  static TensorIr kt(const Cfg& c, Id id, DType t) { return t4(id, c.b, c.kvh, c.sk, c.d, t); }
  static TensorIr vt(const Cfg& c, Id id, DType t) { return t4(id, c.b, c.kvh, c.sk, c.dv, t); }
  static TensorIr ot(const Cfg& c, Id id, DType t) { return t4(id, c.b, c.h, c.sq, c.dv, t); }
  static TensorIr lt(const Cfg& c, Id id) {
    return tir(id, {static_cast<Id>(c.b), static_cast<Id>(c.h), static_cast<Id>(c.sq)});
  }
  static TensorIr as_out(TensorIr t) {
    t.status = TensorStatus::NotInit;
    return t;
  }
  // AttentionWithLogsumexp on q, k, v registered under id..id+2; out id+3, logsumexp id+4.
  OperationIr forward_op(const Cfg& c, const Opts& o, DType t, Id id) {
    return make_op<K::Module_AttentionWithLogsumexp>(
        AttentionWithLogsumexpOpIr{qt(c, id, t), kt(c, id + 1, t), vt(c, id + 2, t), ir_options(o),
                                   as_out(ot(c, id + 3, t)), as_out(lt(c, id + 4))});
  }
  Attn forward(const Cfg& c, const Opts& o, const Vec& q, const Vec& k, const Vec& v, DType t,
               Id id) {
    put(qt(c, id, t), q);
    put(kt(c, id + 1, t), k);
    put(vt(c, id + 2, t), v);
    run(forward_op(c, o, t, id));
    return {get(ot(c, id + 3, t)), get(lt(c, id + 4))};
  }
  // AttentionBackward reading out `out_id`, logsumexp `lse_id` and out_grad id+5 (registered
  // here); gradients id+6..id+8.
  OperationIr backward_op(const Cfg& c, const Opts& o, DType t, Id id, Id out_id, Id lse_id) {
    return make_op<K::Module_AttentionBackward>(AttentionBackwardOpIr{
        qt(c, id, t), kt(c, id + 1, t), vt(c, id + 2, t), ot(c, out_id, t), lt(c, lse_id),
        ot(c, id + 5, t), ir_options(o), as_out(qt(c, id + 6, t)), as_out(kt(c, id + 7, t)),
        as_out(vt(c, id + 8, t))});
  }
  Grads backward_after(const Cfg& c, const Opts& o, const Vec& dout, DType t, Id id, Id out_id,
                       Id lse_id) {
    put(ot(c, id + 5, t), dout);
    run(backward_op(c, o, t, id, out_id, lse_id));
    return {get(qt(c, id + 6, t)), get(kt(c, id + 7, t)), get(vt(c, id + 8, t))};
  }
  // The forward, then the backward from its out and logsumexp.
  Grads backward(const Cfg& c, const Opts& o, const Vec& q, const Vec& k, const Vec& v,
                 const Vec& dout, DType t, Id id) {
    forward(c, o, q, k, v, t, id);
    return backward_after(c, o, dout, t, id, id + 3, id + 4);
  }
};

#define ATTENTION_SUITE(name) \
  class name : public AttentionTest {}

// A GQA case with more keys than queries and an MQA case with fewer (bottom-right alignment
// then masks every key of the first queries).
const Cfg kGqa{1, 4, 2, 3, 5, 4, 3};
const Cfg kMqa{2, 3, 1, 4, 2, 2, 3};

// ---------------------------------------------------------------------------------------------

ATTENTION_SUITE(Module_AttentionCausalAlignment);

TEST_F(Module_AttentionCausalAlignment, AnchorsTheDiagonalTopLeftOrBottomRight) {
  // Zero scores and one-hot values: the output is the row of attention weights itself.
  struct Case {
    I64 sq, sk;
    bool top_left;
    Vec expected;
  };
  const double t = 1.0 / 3;
  const Case cases[] = {{2, 3, true, {1, 0, 0, 0.5, 0.5, 0}},
                        {2, 3, false, {0.5, 0.5, 0, t, t, t}},
                        {3, 2, true, {1, 0, 0.5, 0.5, 0.5, 0.5}},
                        {3, 2, false, {0, 0, 1, 0, 0.5, 0.5}}};
  Id id = 1;
  for (const auto& cs : cases) {
    const Cfg c{1, 1, 1, cs.sq, cs.sk, 1, cs.sk};
    Vec eye(cs.sk * cs.sk, 0.0);
    for (I64 j = 0; j < cs.sk; ++j) eye[j * cs.sk + j] = 1;
    put(qt(c, id, kF32), Vec(cs.sq, 0.0));
    put(kt(c, id + 1, kF32), Vec(cs.sk, 0.0));
    put(vt(c, id + 2, kF32), eye);
    Opts o;
    o.causal = true;
    o.top_left = cs.top_left;
    run(make_op<K::Module_Attention>(AttentionOpIr{qt(c, id, kF32), kt(c, id + 1, kF32),
                                                   vt(c, id + 2, kF32), std::nullopt, std::nullopt,
                                                   ir_options(o), as_out(ot(c, id + 3, kF32))}));
    expect_near(get(ot(c, id + 3, kF32)), cs.expected);
    id += 4;
  }
}

TEST_F(Module_AttentionCausalAlignment, MatchesTheReferenceWithMaskBiasAndGqa) {
  Id id = 1;
  for (const Cfg& c : {kGqa, kMqa}) {
    const Vec q = rnd(c.nq(), 1, -2, 2), k = rnd(c.nk(), 2, -2, 2), v = rnd(c.nv(), 3);
    Vec mask = rnd(c.b * c.h * c.sq * c.sk, 4);
    for (auto& x : mask) x = x > 0.5 ? 1 : 0;
    const Vec bias = rnd(mask.size(), 5);
    const auto mt = tir(id + 3, dims4(c.b, c.h, c.sq, c.sk), DType::boolean(BoolStore::U8));
    const auto bt = tir(id + 4, dims4(c.b, c.h, c.sq, c.sk));
    put(qt(c, id, kF64), q);
    put(kt(c, id + 1, kF64), k);
    put(vt(c, id + 2, kF64), v);
    put(mt, mask);
    put(bt, bias);
    for (int i = 4; i < 12; ++i) {  // the causal variants
      const Opts o = variant(i);
      const auto out_ir = as_out(ot(c, id + 5 + i, kF64));
      run(make_op<K::Module_Attention>(AttentionOpIr{qt(c, id, kF64), kt(c, id + 1, kF64),
                                                     vt(c, id + 2, kF64), mt, bt, ir_options(o),
                                                     out_ir}));
      expect_near(get(out_ir), ref_forward(c, o, q, k, v, &mask, &bias).out, 1e-12);
      if (HasFailure()) return ADD_FAILURE() << "variant " << i << ", seq_q " << c.sq;
    }
    id += 20;
  }
}

// ---------------------------------------------------------------------------------------------

ATTENTION_SUITE(Module_AttentionWithLogsumexp);

TEST_F(Module_AttentionWithLogsumexp, HandComputedSingleQuery) {
  // q = [1, 0], keys [1, 0] and [0, 1], values 10 and 20; scale 1/sqrt(2): scores 0.707 and 0.
  const Cfg c{1, 1, 1, 1, 2, 2, 1};
  const auto r = forward(c, {}, {1, 0}, {1, 0, 0, 1}, {10, 20}, kF32, 1);
  const double s0 = 1 / std::sqrt(2.0), p0 = 1 / (1 + std::exp(-s0));
  expect_near(r.out, {10 * p0 + 20 * (1 - p0)});
  expect_near(r.lse, {std::log(std::exp(s0) + 1)});
}

TEST_F(Module_AttentionWithLogsumexp, MatchesTheReferenceForEveryOption) {
  Id id = 1;
  for (const Cfg& c : {kGqa, kMqa}) {
    const Vec q = rnd(c.nq(), 11, -2, 2), k = rnd(c.nk(), 12, -2, 2), v = rnd(c.nv(), 13);
    for (auto dt : {kF32, kF64}) {
      for (int i = 0; i < 12; ++i) {
        const Opts o = variant(i);
        const auto r = forward(c, o, q, k, v, dt, id);
        const auto e = ref_forward(c, o, q, k, v);
        expect_near(r.out, e.out, dt == kF64 ? 1e-12 : 1e-5);
        // logsumexp is F32 (get() checks the dtype) for an f64 query too.
        expect_near(r.lse, e.lse, 1e-6);
        if (HasFailure()) return ADD_FAILURE() << "variant " << i << ", seq_q " << c.sq;
        id += 5;
      }
    }
  }
}

TEST_F(Module_AttentionWithLogsumexp, HalfPrecisionComputesInF32) {
  Opts o = variant(10);  // softcap, top-left causal
  const Vec q = rnd(kGqa.nq(), 21, -2, 2), k = rnd(kGqa.nk(), 22, -2, 2), v = rnd(kGqa.nv(), 23);
  const auto e = ref_forward(kGqa, o, q, k, v);
  Id id = 1;
  for (auto dt : {kF16, kBF16}) {
    const auto r = forward(kGqa, o, q, k, v, dt, id);
    expect_near(r.out, e.out, dt == kF16 ? 2e-3 : 1e-2);
    // The inputs are exact in f16: an f32 softmax gives the logsumexp to f32's precision.
    expect_near(r.lse, e.lse, 1e-5);
    id += 5;
  }
}

TEST_F(Module_AttentionWithLogsumexp, QueriesWithoutKeysHoldF32Lowest) {
  // Bottom-right, seq_q 3 > seq_k 2: query 0 sees no key. Its logsumexp is f32's lowest finite
  // value for an f64 query too (f64's lowest would read back as -inf), and its output 0.
  const Cfg c{1, 1, 1, 3, 2, 1, 1};
  Opts o;
  o.causal = true;
  Id id = 1;
  for (auto dt : {kF32, kF64}) {
    const auto r = forward(c, o, {1, 2, 3}, {1, -1}, {5, 7}, dt, id);
    ASSERT_EQ(r.lse.size(), 3u);
    EXPECT_EQ(r.lse[0], kF32Lowest);
    EXPECT_EQ(r.out[0], 0.0);
    expect_near(r.out, ref_forward(c, o, {1, 2, 3}, {1, -1}, {5, 7}).out);
    expect_near({r.lse[1], r.lse[2]}, {2, std::log(std::exp(3.0) + std::exp(-3.0))});
    id += 5;
  }
  // No key at all: every query likewise. No query: empty outputs.
  const Cfg no_keys{1, 2, 1, 2, 0, 3, 2}, no_queries{1, 2, 2, 0, 3, 3, 2};
  const auto r = forward(no_keys, {}, rnd(no_keys.nq(), 1), {}, {}, kF32, 20);
  EXPECT_EQ(r.out, Vec(no_keys.nout(), 0.0));
  EXPECT_EQ(r.lse, Vec(4, kF32Lowest));
  const auto r2 =
      forward(no_queries, {}, {}, rnd(no_queries.nk(), 2), rnd(no_queries.nv(), 3), kF32, 30);
  EXPECT_TRUE(r2.out.empty() && r2.lse.empty());
}

TEST_F(Module_AttentionWithLogsumexp, RejectsBadShapesAndSoftcap) {
  const Cfg ok{1, 2, 1, 2, 2, 2, 2}, heads{1, 3, 2, 2, 2, 2, 2}, no_dim{1, 2, 1, 2, 2, 0, 2};
  put(qt(ok, 1, kF32), rnd(ok.nq(), 1));
  put(kt(ok, 2, kF32), rnd(ok.nk(), 2));
  put(vt(ok, 3, kF32), rnd(ok.nv(), 3));
  Opts capped;
  capped.softcap = -1;
  EXPECT_THAT(run_error(forward_op(ok, capped, kF32, 1)), HasSubstr("softcap must be positive"));
  put(qt(heads, 11, kF32), rnd(heads.nq(), 1));
  put(kt(heads, 12, kF32), rnd(heads.nk(), 2));
  put(vt(heads, 13, kF32), rnd(heads.nv(), 3));
  EXPECT_THAT(run_error(forward_op(heads, {}, kF32, 11)),
              HasSubstr("3 query heads cannot share 2"));
  put(qt(no_dim, 21, kF32), {});
  put(kt(no_dim, 22, kF32), {});
  put(vt(no_dim, 23, kF32), rnd(no_dim.nv(), 3));
  EXPECT_THAT(run_error(forward_op(no_dim, {}, kF32, 21)), HasSubstr("head_dim must be non-zero"));
}

// ---------------------------------------------------------------------------------------------

ATTENTION_SUITE(Module_AttentionBackward);

TEST_F(Module_AttentionBackward, MatchesTheReferenceAndFiniteDifferences) {
  Id id = 1;
  for (const Cfg& c : {kGqa, kMqa}) {
    const Vec q = rnd(c.nq(), 31, -2, 2), k = rnd(c.nk(), 32, -2, 2), v = rnd(c.nv(), 33),
              dout = rnd(c.nout(), 34);
    for (int i = 0; i < 12; ++i) {
      const Opts o = variant(i);
      const auto e = ref_backward(c, o, q, k, v, dout);
      const auto fd = fd_backward(c, o, q, k, v, dout);
      for (auto dt : {kF32, kF64}) {
        const auto g = backward(c, o, q, k, v, dout, dt, id);
        for (int w = 0; w < 3; ++w) {
          // The logsumexp is f32 whatever the query: the probabilities read back from it bound
          // an f64 gradient's precision.
          expect_near(g[w], e[w], dt == kF64 ? 1e-6 : 1e-5);
          if (dt == kF64) expect_near(g[w], fd[w], 1e-6);
          if (HasFailure())
            return ADD_FAILURE() << "variant " << i << ", seq_q " << c.sq << ", grad " << w;
        }
        id += 10;
      }
    }
  }
}

TEST_F(Module_AttentionBackward, QueriesWithoutKeysGetNoGradient) {
  // kMqa, bottom-right: queries 0 and 1 of each head see no key. A row of dout there must not
  // reach any gradient: exactly 0 for those queries, and the key/value gradients unchanged.
  const Cfg& c = kMqa;
  const Opts o = variant(5);
  const Vec q = rnd(c.nq(), 41, -2, 2), k = rnd(c.nk(), 42, -2, 2), v = rnd(c.nv(), 43);
  Vec dout = rnd(c.nout(), 44), dout_live = dout;
  for (std::size_t r = 0; r < c.nout() / c.dv; ++r)
    for (I64 e = 0; e < c.dv; ++e)
      if (static_cast<I64>(r) % c.sq < 2) dout_live[r * c.dv + e] = 0;
  const auto g = backward(c, o, q, k, v, dout, kF32, 1);
  const auto g_live = backward(c, o, q, k, v, dout_live, kF32, 20);
  for (std::size_t r = 0; r < c.nq() / c.d; ++r)
    for (I64 e = 0; e < c.d; ++e)
      if (static_cast<I64>(r) % c.sq < 2) {
        EXPECT_EQ(g[0][r * c.d + e], 0.0) << "query row " << r;
      }
  EXPECT_EQ(g[1], g_live[1]);
  EXPECT_EQ(g[2], g_live[2]);
}

TEST_F(Module_AttentionBackward, ReadsTheGivenLogsumexp) {
  // As Burn's default, the probabilities are exp(score - logsumexp) of the logsumexp passed in:
  // one larger by log 2 halves them, and with them the value gradient.
  const Cfg& c = kGqa;
  const Vec q = rnd(c.nq(), 51, -2, 2), k = rnd(c.nk(), 52, -2, 2), v = rnd(c.nv(), 53),
            dout = rnd(c.nout(), 54);
  const auto g = backward(c, {}, q, k, v, dout, kF64, 1);  // out 4, logsumexp 5
  Vec lse = get(lt(c, 5));
  for (auto& x : lse) x += std::log(2.0);
  put(lt(c, 100), lse);
  put(qt(c, 20, kF64), q);
  put(kt(c, 21, kF64), k);
  put(vt(c, 22, kF64), v);
  const auto shifted = backward_after(c, {}, dout, kF64, 20, 4, 100);
  Vec half = g[2];
  for (auto& x : half) x /= 2;
  expect_near(shifted[2], half, 1e-6);
}

TEST_F(Module_AttentionBackward, HalfPrecision) {
  const Opts o = variant(7);  // scale, softcap, bottom-right causal
  const Vec q = rnd(kGqa.nq(), 61, -2, 2), k = rnd(kGqa.nk(), 62, -2, 2), v = rnd(kGqa.nv(), 63),
            dout = rnd(kGqa.nout(), 64);
  const auto e = ref_backward(kGqa, o, q, k, v, dout);
  Id id = 1;
  for (auto dt : {kF16, kBF16}) {
    const auto g = backward(kGqa, o, q, k, v, dout, dt, id);  // get() checks they are `dt`
    for (int w = 0; w < 3; ++w) expect_near(g[w], e[w], dt == kF16 ? 5e-3 : 3e-2);
    id += 10;
  }
}

TEST_F(Module_AttentionBackward, EmptyDimsGiveZeroGradients) {
  // No key: the query gradient is 0 (the key/value gradients are empty). No value component:
  // the output is empty, so every gradient is 0.
  const Cfg no_keys{1, 2, 1, 2, 0, 3, 2}, no_values{1, 2, 2, 2, 3, 3, 0};
  const auto g =
      backward(no_keys, {}, rnd(no_keys.nq(), 1), {}, {}, Vec(no_keys.nout(), 1.0), kF32, 1);
  EXPECT_EQ(g[0], Vec(no_keys.nq(), 0.0));
  EXPECT_TRUE(g[1].empty() && g[2].empty());
  const auto g2 =
      backward(no_values, {}, rnd(no_values.nq(), 1), rnd(no_values.nk(), 2), {}, {}, kF32, 20);
  EXPECT_EQ(g2[0], Vec(no_values.nq(), 0.0));
  EXPECT_EQ(g2[1], Vec(no_values.nk(), 0.0));
}

TEST_F(Module_AttentionBackward, RejectsMismatchedOutAndLogsumexp) {
  const Cfg c{1, 2, 1, 2, 3, 2, 2}, other{1, 2, 1, 3, 3, 2, 2};
  forward(c, {}, rnd(c.nq(), 1), rnd(c.nk(), 2), rnd(c.nv(), 3), kF32, 1);
  put(ot(c, 6, kF32), rnd(c.nout(), 4));
  put(lt(other, 50), rnd(6, 5));
  EXPECT_THAT(run_error(backward_op(c, {}, kF32, 1, 4, 50)),
              HasSubstr("logsumexp must be [1, 2, 2]"));
  put(ot(other, 51, kF32), rnd(other.nout(), 6));
  EXPECT_THAT(run_error(make_op<K::Module_AttentionBackward>(
                  AttentionBackwardOpIr{qt(c, 1, kF32),
                                        kt(c, 2, kF32),
                                        vt(c, 3, kF32),
                                        ot(other, 51, kF32),
                                        lt(c, 5),
                                        ot(c, 6, kF32),
                                        {},
                                        as_out(qt(c, 60, kF32)),
                                        as_out(kt(c, 61, kF32)),
                                        as_out(vt(c, 62, kF32))})),
              HasSubstr("out and out_grad must be"));
}

}  // namespace
}  // namespace tb::test
