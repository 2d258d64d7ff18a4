// QFloat bytes to and from QTensors (quant.hpp's from_data / to_data): where each value sits in a
// packed store, the layouts Burn writes, and the scales region that follows the values.
#include <cstring>

#include <fmt/format.h>

#include "quant/quant.hpp"
#include "quant/quant_internal.hpp"

namespace tb::backend::libtorch::quant {

using ir::QuantScheme;
using ir::QuantStoreKind;
using ir::ScaleDtype;

using namespace detail;

namespace {

// Where the values of a packed store go: the stored tensor (packing axis swapped innermost), its
// line length and how many lines.
struct ValueLayout {
  int bits = 8;
  int per_word = 1;  // values per storage word
  int word_bytes = 1;
  std::optional<std::int64_t> swapped;  // the outer axis stored innermost
  std::int64_t lines = 1;
  std::int64_t line = 0;  // values per line
  std::int64_t words_per_line = 0;

  std::size_t bytes() const {
    return static_cast<std::size_t>(lines * words_per_line * word_bytes);
  }
  // One value per byte, nothing to mask.
  bool unpacked() const { return per_word == 1; }
};

Result<ValueLayout> value_layout(const std::vector<std::int64_t>& shape, const QuantScheme& s,
                                 Packing packing) {
  ValueLayout l;
  l.bits = quant_value_bits(s.value);
  const int word_bits = quant_store_bits(s);
  l.per_word = word_bits / l.bits;
  l.word_bytes = (word_bits + 7) / 8;
  const std::int64_t numel = product(shape);
  if (packing == Packing::kBytes) {
    l.per_word = 1;
    l.word_bytes = 1;
    l.lines = 1;
    l.line = numel;
    l.words_per_line = numel;
    return l;
  }
  const bool per_line = packing == Packing::kPerLine && l.per_word > 1 && !shape.empty() &&
                        s.store.kind != QuantStoreKind::Native;
  if (!per_line) {
    l.lines = 1;
    l.line = numel;
    l.words_per_line = (numel + l.per_word - 1) / l.per_word;
    return l;
  }
  const auto rank = static_cast<std::int64_t>(shape.size());
  const auto packing_dim = static_cast<std::int64_t>(s.store.packing_dim);
  if (packing_dim >= rank) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{} packs along dimension {} from the innermost, outside a rank-{} tensor",
                      describe(s), packing_dim, rank);
  }
  const std::int64_t axis = rank - packing_dim - 1;
  auto stored = shape;
  if (axis != rank - 1) {
    l.swapped = axis;
    std::swap(stored[static_cast<std::size_t>(axis)], stored.back());
  }
  l.line = stored.back();
  l.lines = l.line == 0 ? 0 : numel / l.line;
  if (l.line == 0) {
    std::vector<std::int64_t> outer(stored.begin(), stored.end() - 1);
    l.lines = product(outer);
  }
  l.words_per_line = (l.line + l.per_word - 1) / l.per_word;
  return l;
}

// The stored grid order: swapped with the values when the packing axis is not innermost.
at::Tensor stored_order(const at::Tensor& logical, const ValueLayout& l) {
  if (!l.swapped || logical.dim() == 0) return logical;
  return logical.transpose(*l.swapped, logical.dim() - 1);
}

// The layout `total` bytes of data come in: the canonical one first, then the two others Burn
// writes (they coincide with it whenever every line is a whole number of words).
Result<std::pair<ValueLayout, Packing>> find_layout(const std::vector<std::int64_t>& shape,
                                                    const QuantScheme& s, std::size_t param_len,
                                                    std::size_t total) {
  std::string expected;
  for (Packing p : {Packing::kPerLine, Packing::kBytes, Packing::kFlat}) {
    auto l = value_layout(shape, s, p);
    if (!l) {
      if (p == Packing::kPerLine) expected = l.error().message;
      continue;
    }
    if (p == Packing::kPerLine) {
      expected = fmt::format("{} bytes ({} of values, {} of scales)", l.value().bytes() + param_len,
                             l.value().bytes(), param_len);
    }
    if (l.value().bytes() + param_len == total) return std::make_pair(l.value(), p);
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "QFloat TensorData ({}) of shape {} needs {}, got {} bytes", describe(s),
                    shape_str(shape), expected, total);
}

// The values region as one value per element, in logical order.
at::Tensor unpack_values(const std::uint8_t* bytes, const std::vector<std::int64_t>& shape,
                         const ValueLayout& l, bool minifloat) {
  std::vector<std::int64_t> stored = shape;
  if (l.swapped) std::swap(stored[static_cast<std::size_t>(*l.swapped)], stored.back());
  at::Tensor values =
      at::empty(stored, at::TensorOptions().dtype(minifloat ? at::kByte : at::kChar));
  auto* out = static_cast<std::uint8_t*>(values.data_ptr());
  if (l.unpacked()) {
    const std::int64_t numel = product(shape);
    if (numel) std::memcpy(out, bytes, static_cast<std::size_t>(numel));
  } else {
    const std::uint32_t mask = (1u << l.bits) - 1u;
    for (std::int64_t line = 0; line < l.lines; ++line) {
      for (std::int64_t i = 0; i < l.line; ++i) {
        const std::int64_t w = line * l.words_per_line + i / l.per_word;
        std::uint32_t word = 0;
        std::memcpy(&word, bytes + w * l.word_bytes, static_cast<std::size_t>(l.word_bytes));
        std::uint32_t field = (word >> ((i % l.per_word) * l.bits)) & mask;
        if (!minifloat && (field >> (l.bits - 1))) field |= ~mask;  // sign-extend
        out[line * l.line + i] = static_cast<std::uint8_t>(field);
      }
    }
  }
  if (l.swapped) values = values.transpose(*l.swapped, values.dim() - 1).contiguous();
  return values;
}

// The block scales at `p`, as the f32 grid in logical order.
at::Tensor read_scales(const std::uint8_t* p, const std::vector<std::int64_t>& grid,
                       const ValueLayout& l, const QuantScheme& s) {
  const ScaleDtype sd = scale_dtype(s);
  std::vector<std::int64_t> stored_grid = grid;
  if (l.swapped && s.block)
    std::swap(stored_grid[static_cast<std::size_t>(*l.swapped)], stored_grid.back());
  at::Tensor scales = at::empty(stored_grid, at::TensorOptions().dtype(at::kFloat));
  float* sp = scales.data_ptr<float>();
  for (std::int64_t i = 0; i < scales.numel(); ++i)
    sp[i] = decode_scale(p + i * scale_size(sd), sd);
  if (l.swapped && s.block) scales = scales.transpose(*l.swapped, scales.dim() - 1).contiguous();
  return scales;
}

}  // namespace

Result<QTensor> from_data(const ir::TensorData& data, const at::Device& device) {
  const QuantScheme& s = data.dtype.scheme;
  const std::vector<std::int64_t> shape(data.shape.begin(), data.shape.end());
  const auto grid = grid_of(shape, s);
  const std::size_t param_len = params_bytes(s, product(grid));
  const std::size_t total = data.bytes.size();
  TB_TRY_ASSIGN(const auto found, find_layout(shape, s, param_len, total));
  const auto& [l, packing] = found;
  const std::uint8_t* bytes = data.bytes.data();

  // Values, then the scales, then the per-tensor scale.
  at::Tensor values = unpack_values(bytes, shape, l, is_minifloat(s.value));
  at::Tensor scales = read_scales(bytes + l.bytes(), grid, l, s);
  std::optional<float> global;
  if (auto g = global_dtype(s)) {
    global = decode_scale(bytes + total - scale_size(*g), *g);
  }

  QTensor q;
  q.scheme = s;
  q.global = global;
  q.packing = packing;
  q.params = std::make_shared<const std::vector<std::uint8_t>>(bytes + l.bytes(), bytes + total);
  q.scales = scales;
  q.values = as_torch(values, s, scales);
  return to_device(q, device);
}

Result<ir::TensorData> to_data(const QTensor& q, bool canonical) {
  const QuantScheme& s = q.scheme;
  const auto shape = q.shape();
  // The scales region is copied only into the layout it came in; otherwise it is written from the
  // grid, in the packed order of the layout written.
  const Packing packing = canonical ? Packing::kPerLine : q.packing;
  const bool verbatim_params = q.params && packing == q.packing;
  TB_TRY_ASSIGN(const ValueLayout l, value_layout(shape, s, packing));

  std::vector<std::uint8_t> bytes(l.bytes(), 0);
  at::Tensor values = stored_order(plain_values(q), l).to(at::kCPU).contiguous();
  const auto* in = static_cast<const std::uint8_t*>(values.data_ptr());
  if (l.unpacked()) {
    if (!bytes.empty()) std::memcpy(bytes.data(), in, bytes.size());
  } else {
    const std::uint32_t mask = (1u << l.bits) - 1u;
    for (std::int64_t line = 0; line < l.lines; ++line) {
      for (std::int64_t i = 0; i < l.line; ++i) {
        const std::int64_t w = line * l.words_per_line + i / l.per_word;
        const std::uint32_t field = (static_cast<std::uint32_t>(in[line * l.line + i]) & mask)
                                    << ((i % l.per_word) * l.bits);
        std::uint32_t word = 0;
        std::memcpy(&word, bytes.data() + w * l.word_bytes, static_cast<std::size_t>(l.word_bytes));
        word |= field;
        std::memcpy(bytes.data() + w * l.word_bytes, &word, static_cast<std::size_t>(l.word_bytes));
      }
    }
  }

  if (verbatim_params) {
    bytes.insert(bytes.end(), q.params->begin(), q.params->end());
  } else {
    const ScaleDtype sd = scale_dtype(s);
    at::Tensor grid = q.scales;
    if (s.block) grid = stored_order(grid, l);
    for (float f : floats_of(grid)) encode_scale(f, sd, bytes);
    if (auto g = global_dtype(s)) encode_scale(q.global.value_or(1.0f), *g, bytes);
  }
  ir::TensorData out;
  out.shape.assign(shape.begin(), shape.end());
  out.dtype = ir::DType::qfloat(s);
  out.bytes = ir::Bytes::from_vector(std::move(bytes));
  return out;
}

}  // namespace tb::backend::libtorch::quant
