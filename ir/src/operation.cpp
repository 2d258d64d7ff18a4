#include "torchbridge/ir/operation.hpp"

#include <string>
#include <vector>

namespace tb::ir {

OperationIr::OperationIr() = default;
OperationIr::OperationIr(const OperationIr& other) = default;
OperationIr::OperationIr(OperationIr&& other) noexcept = default;
OperationIr& OperationIr::operator=(const OperationIr& other) = default;
OperationIr& OperationIr::operator=(OperationIr&& other) noexcept = default;
OperationIr::~OperationIr() = default;

bool operator==(const OperationIr& a, const OperationIr& b) {
  return a.kind == b.kind && (!category_has_dtype(a.category()) || a.dtype == b.dtype) &&
         a.payload == b.payload;
}

namespace {

template <class T, class V>
struct VariantIndex;
template <class T, class... Ts>
struct VariantIndex<T, std::variant<Ts...>> {
  static constexpr std::size_t value = [] {
    constexpr bool matches[] = {std::is_same_v<T, Ts>...};
    for (std::size_t i = 0; i < sizeof...(Ts); ++i)
      if (matches[i]) return i;
    return sizeof...(Ts);
  }();
};

struct RawLeaf {
  OpCategory category;
  const char* variant;
  std::uint8_t payload_index;
  WireRange wire;
};

#define TB_RAW_LEAF(Cat, V, P, Lowering, Fn, Wire)                                           \
  RawLeaf{OpCategory::Cat, #V, static_cast<std::uint8_t>(VariantIndex<P, OpPayload>::value), \
          TB_WIRE_##Wire},
constexpr RawLeaf kRawLeaves[] = {TB_OP_LEAVES(TB_RAW_LEAF)};
#undef TB_RAW_LEAF
static_assert(sizeof(kRawLeaves) / sizeof(RawLeaf) == kOpKindCount);

bool has_inner_enum(OpCategory c) {
  return c != OpCategory::Init && c != OpCategory::Custom && c != OpCategory::Drop;
}

struct Tables {
  std::vector<std::string> names;
  std::vector<OpInfo> infos;
  std::array<std::uint16_t, EnumNames<OpCategory>::kNames.size()> first{};
  std::array<std::uint16_t, EnumNames<OpCategory>::kNames.size()> count{};

  Tables() {
    names.reserve(kOpKindCount);
    infos.reserve(kOpKindCount);
    for (std::size_t k = 0; k < kOpKindCount; ++k) {
      const RawLeaf& leaf = kRawLeaves[k];
      const auto c = static_cast<std::size_t>(leaf.category);
      if (k == 0 || kRawLeaves[k - 1].category != leaf.category) {
        first[c] = static_cast<std::uint16_t>(k);
      }
      const std::string cat(enum_name(leaf.category));
      names.push_back(has_inner_enum(leaf.category) ? cat + "." + leaf.variant : cat);
    }
    for (std::size_t k = 0; k < kOpKindCount; ++k) {
      const RawLeaf& leaf = kRawLeaves[k];
      const auto c = static_cast<std::size_t>(leaf.category);
      const std::string_view full = names[k];
      OpInfo info{
          leaf.category,
          static_cast<std::uint8_t>(count[c]++),
          full,
          has_inner_enum(leaf.category) ? full.substr(full.find('.') + 1) : std::string_view(),
          leaf.payload_index,
          leaf.wire};
      infos.push_back(info);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const OpInfo& op_info(OpKind kind) {
  return tables().infos[static_cast<std::size_t>(kind)];
}

OpKind first_kind(OpCategory category) {
  return static_cast<OpKind>(tables().first[static_cast<std::size_t>(category)]);
}

std::size_t kind_count(OpCategory category) {
  return tables().count[static_cast<std::size_t>(category)];
}

}  // namespace tb::ir
