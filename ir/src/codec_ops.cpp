// Codec for OperationIr: `{"Category": inner}`, where inner is `[DType, {"Variant": payload}]` for
// NumericFloat / NumericInt / Float, the payload itself for Init / Custom / Drop, and
// `{"Variant": payload}` (or the bare name of a unit variant) otherwise.
#include <string>

#include "codec_values.hpp"
#include "torchbridge/ir/codec.hpp"

namespace tb::ir {

namespace {

using PayloadReader = bool (*)(Reader&, OpPayload&);
using PayloadWriter = void (*)(Writer&, const OpPayload&);

template <class P>
bool read_payload(Reader& r, OpPayload& payload) {
  return read_value(r, payload.emplace<P>());
}
template <>
bool read_payload<UnitPayload>(Reader& r, OpPayload& payload) {
  payload.emplace<UnitPayload>();
  return r.nil();
}
template <class P>
void write_payload(Writer& w, const OpPayload& payload) {
  write_value(w, std::get<P>(payload));
}
template <>
void write_payload<UnitPayload>(Writer& w, const OpPayload&) {
  w.nil();
}

#define TB_LEAF_READER(Cat, V, P, ...) &read_payload<P>,
#define TB_LEAF_WRITER(Cat, V, P, ...) &write_payload<P>,
#define TB_LEAF_IS_UNIT(Cat, V, P, ...) std::is_same_v<P, UnitPayload>,
constexpr PayloadReader kReaders[] = {TB_OP_LEAVES(TB_LEAF_READER)};
constexpr PayloadWriter kWriters[] = {TB_OP_LEAVES(TB_LEAF_WRITER)};
constexpr bool kUnit[] = {TB_OP_LEAVES(TB_LEAF_IS_UNIT)};
#undef TB_LEAF_READER
#undef TB_LEAF_WRITER
#undef TB_LEAF_IS_UNIT

// (category, variant name) -> leaf: one table over every leaf, the category salting the hash.
class NameIndex {
 public:
  NameIndex() {
    for (std::size_t k = 0; k < kOpKindCount; ++k) {
      const OpInfo& info = op_info(static_cast<OpKind>(k));
      table_.insert(hash(info.category, info.variant_name), k);
    }
  }
  int find(OpCategory category, std::string_view variant) const {
    return table_.find(hash(category, variant), [&](std::size_t k) {
      const OpInfo& info = op_info(static_cast<OpKind>(k));
      return info.category == category && same_name(info.variant_name, variant);
    });
  }

 private:
  static std::uint32_t hash(OpCategory category, std::string_view variant) {
    return name_hash(variant, static_cast<std::uint32_t>(category) + 1);
  }
  NameTable<name_table_capacity(kOpKindCount)> table_;
};
const NameIndex& name_index() {
  static const NameIndex index;
  return index;
}

// The Burn enum a category wraps, for error messages.
const char* inner_enum_name(OpCategory c) {
  switch (c) {
    case OpCategory::BaseFloat:
    case OpCategory::BaseInt:
    case OpCategory::BaseBool:
      return "BaseOperationIr";
    case OpCategory::NumericFloat:
    case OpCategory::NumericInt:
      return "NumericOperationIr";
    case OpCategory::Bool:
      return "BoolOperationIr";
    case OpCategory::Int:
      return "IntOperationIr";
    case OpCategory::Float:
      return "FloatOperationIr";
    case OpCategory::Module:
      return "ModuleOperationIr";
    case OpCategory::Distributed:
      return "DistributedOperationIr";
    case OpCategory::Activation:
      return "ActivationOperationIr";
    default:
      return "OperationIr";
  }
}

bool read_inner(Reader& r, OpCategory category, OperationIr& op) {
  const char* enum_name = inner_enum_name(category);
  std::string_view variant;
  bool has_payload = false;
  if (!read_enum_head(r, enum_name, variant, has_payload)) return false;
  const int leaf = name_index().find(category, variant);
  if (leaf < 0) return unknown_variant(r, enum_name, variant);
  op.kind = static_cast<OpKind>(leaf);
  const auto k = static_cast<std::size_t>(op.kind);
  PathGuard g(r, op_info(op.kind).variant_name.data());
  if (!has_payload) {
    if (!kUnit[k]) return r.failf("variant {}::{} needs a payload", enum_name, variant);
    op.payload.emplace<UnitPayload>();
    return true;
  }
  return kReaders[k](r, op.payload);
}

}  // namespace

bool read_value(Reader& r, OperationIr& op) {
  std::uint32_t n = 0;
  if (!r.map(n)) return false;
  if (n != 1) return r.failf("expected a one-entry map for enum OperationIr, got {} entries", n);
  std::string_view name;
  if (!r.str(name)) return false;
  const int c = find_name<EnumNames<OpCategory>::kNames>(name);
  if (c < 0) return unknown_variant(r, "OperationIr", name);
  const auto category = static_cast<OpCategory>(c);
  PathGuard g(r, EnumNames<OpCategory>::kNames[c].data());
  switch (category) {
    case OpCategory::Init:
    case OpCategory::Custom:
    case OpCategory::Drop: {
      op.kind = first_kind(category);
      return kReaders[static_cast<std::size_t>(op.kind)](r, op.payload);
    }
    case OpCategory::NumericFloat:
    case OpCategory::NumericInt:
    case OpCategory::Float: {
      if (!r.array_of(2)) return false;
      {
        PathGuard g0(r, std::int64_t{0});
        if (!read_value(r, op.dtype)) return false;
      }
      PathGuard g1(r, std::int64_t{1});
      return read_inner(r, category, op);
    }
    default:
      return read_inner(r, category, op);
  }
}

void write_value(Writer& w, const OperationIr& op) {
  const OpInfo& info = op_info(op.kind);
  const auto k = static_cast<std::size_t>(op.kind);
  w.map(1);
  w.str(enum_name(info.category));
  switch (info.category) {
    case OpCategory::Init:
    case OpCategory::Custom:
    case OpCategory::Drop:
      kWriters[k](w, op.payload);
      return;
    case OpCategory::NumericFloat:
    case OpCategory::NumericInt:
    case OpCategory::Float:
      w.array(2);
      write_value(w, op.dtype);
      break;
    default:
      break;
  }
  if (kUnit[k]) {
    w.str(info.variant_name);
    return;
  }
  w.map(1);
  w.str(info.variant_name);
  kWriters[k](w, op.payload);
}

template <>
Result<OperationIr> decode<OperationIr>(const Bytes& bytes, DecodeLimits limits) {
  return decode_impl<OperationIr>(bytes, limits, "OperationIr");
}
template <>
void encode<OperationIr>(Writer& writer, const OperationIr& value) {
  write_value(writer, value);
}

}  // namespace tb::ir
