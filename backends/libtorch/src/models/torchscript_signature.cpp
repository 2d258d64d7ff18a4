// What a TorchScript module's forward looks like to a custom op: each parameter's role (tensor,
// tensor list, scalar), the outputs, the float parameters, and whether forward writes to module
// attributes or to its inputs; and that signature as `torchbridge models` prints it.
#include "models/torchscript_signature.hpp"

#include <functional>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/passes/inliner.h>

#include "models/torchscript_module.hpp"

namespace tb::backend::libtorch {

namespace {

using Role = TorchScriptParam::Role;

bool is_tensor(const c10::TypePtr& type) {
  return type->kind() == c10::TypeKind::TensorType;
}

bool is_scalar(const c10::TypePtr& type) {
  switch (type->kind()) {
    case c10::TypeKind::FloatType:
    case c10::TypeKind::IntType:
    case c10::TypeKind::BoolType:
    case c10::TypeKind::NumberType:
      return true;
    case c10::TypeKind::OptionalType:
      return is_scalar(type->expectRef<c10::OptionalType>().getElementType());
    default:
      return false;
  }
}

// How many tensors a return type yields: -1 when only known at run time, 0 when it yields none.
int count_outputs(const c10::TypePtr& type) {
  if (is_tensor(type)) return 1;
  if (type->kind() == c10::TypeKind::TupleType) {
    int n = 0;
    for (const auto& e : type->expectRef<c10::TupleType>().elements()) {
      const int k = count_outputs(e);
      if (k <= 0) return k;
      n += k;
    }
    return n;
  }
  if (type->kind() == c10::TypeKind::ListType &&
      is_tensor(type->expectRef<c10::ListType>().getElementType())) {
    return -1;
  }
  return 0;
}

std::string ivalue_string(const c10::IValue& v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

void visit_nodes(torch::jit::Block* block, const std::function<void(torch::jit::Node*)>& f) {
  for (torch::jit::Node* node : block->nodes()) {
    f(node);
    for (torch::jit::Block* inner : node->blocks()) visit_nodes(inner, f);
  }
}

// One parameter of forward after self, or why a custom op cannot feed it.
Result<TorchScriptParam> param_of(const c10::Argument& arg) {
  TorchScriptParam p;
  p.name = arg.name();
  p.type = arg.type()->annotation_str();
  if (is_tensor(arg.type())) {
    p.role = Role::kTensor;
  } else if (arg.type()->kind() == c10::TypeKind::ListType &&
             is_tensor(arg.type()->expectRef<c10::ListType>().getElementType())) {
    p.role = Role::kTensorList;
  } else if (is_scalar(arg.type())) {
    p.role = Role::kScalar;
  } else {
    return make_error(ErrorCode::kUnsupported,
                      "forward's parameter \"{}\" has type {}: only Tensor, List[Tensor], float, "
                      "int, bool and number parameters can be fed from a custom op",
                      p.name, p.type);
  }
  if (arg.default_value()) {
    p.has_default = true;
    p.default_value = ivalue_string(*arg.default_value());
  }
  if (arg.kwarg_only()) {
    return make_error(ErrorCode::kUnsupported,
                      "forward's parameter \"{}\" is keyword-only: custom ops pass arguments by "
                      "position",
                      p.name);
  }
  return p;
}

// What forward writes: module attributes (then calls are serialized) or its inputs (then they
// are copied first, since a session's tensors may be shared by other handles).
void find_writes(const torch::jit::Method& method, bool has_list, TorchScriptSignature& sig) {
  auto graph = method.graph()->copy();
  torch::jit::Inline(*graph);
  visit_nodes(graph->block(), [&](torch::jit::Node* n) {
    if (n->kind() == c10::prim::SetAttr) sig.mutates_state = true;
  });
  torch::jit::AliasDb aliases(graph);
  for (std::size_t i = 1; i < graph->inputs().size(); ++i) {
    if (aliases.hasWriters(graph->inputs()[i])) sig.mutates_inputs = true;
  }
  if (has_list) {
    // A list's elements are harder to follow through alias analysis: any write at all counts.
    visit_nodes(graph->block(), [&](torch::jit::Node* n) {
      if (n->kind().is_aten() && n->maybeSchema() && n->schema().is_mutable()) {
        sig.mutates_inputs = true;
      }
    });
  }
}

}  // namespace

Result<TorchScriptSignature> detail::signature_of(torch::jit::Module& module) {
  const auto method = module.find_method("forward");
  if (!method) return make_error(ErrorCode::kInvalidArgument, "the module has no forward method");
  const c10::FunctionSchema& schema = method->function().getSchema();
  TorchScriptSignature sig;
  std::vector<std::string> shown;
  int tensors = 0;
  int lists = 0;
  // arguments()[0] is self.
  for (std::size_t i = 1; i < schema.arguments().size(); ++i) {
    TB_TRY_ASSIGN(TorchScriptParam p, param_of(schema.arguments()[i]));
    if (p.role == Role::kTensor) ++tensors;
    if (p.role == Role::kTensorList) ++lists;
    shown.push_back(
        fmt::format("{} {}{}", p.type, p.name, p.has_default ? "=" + p.default_value : ""));
    sig.params.push_back(std::move(p));
  }
  if (lists > 1 || (lists == 1 && tensors > 0)) {
    return make_error(ErrorCode::kUnsupported,
                      "forward takes {} Tensor and {} List[Tensor] parameters: a custom op's "
                      "inputs fill either Tensor parameters or one List[Tensor]",
                      tensors, lists);
  }
  if (schema.returns().size() != 1) {
    return make_error(ErrorCode::kUnsupported, "forward returns {} values",
                      schema.returns().size());
  }
  const auto& ret = schema.returns()[0].type();
  sig.returns = ret->annotation_str();
  sig.outputs = count_outputs(ret);
  if (sig.outputs == 0) {
    return make_error(ErrorCode::kUnsupported,
                      "forward returns {}: only a Tensor, a tuple of tensors or a List[Tensor] "
                      "can fill a custom op's outputs",
                      sig.returns);
  }
  sig.schema = fmt::format("forward({}) -> {}", fmt::join(shown, ", "), sig.returns);
  for (const auto& [name, tensor] : detail::float_parameters(module)) {
    sig.parameters.push_back({name, tensor.sizes().vec(), tensor.scalar_type()});
  }
  find_writes(*method, lists > 0, sig);
  return sig;
}

std::string TorchScriptSignature::describe() const {
  std::vector<std::string> tensors;
  std::vector<std::string> scalars;
  bool list = false;
  for (const auto& p : params) {
    if (p.role == Role::kTensor) tensors.push_back(p.name);
    if (p.role == Role::kTensorList) list = true;
    if (p.role == Role::kScalar) {
      scalars.push_back(
          fmt::format("{}: {}{}", p.name, p.type,
                      p.has_default ? " (optional, default " + p.default_value + ")" : ""));
    }
  }
  std::string out = fmt::format("  {}\n", schema);
  if (list) {
    out += "  inputs:  any number of tensors (one List[Tensor] parameter), in order\n";
  } else {
    out +=
        fmt::format("  inputs:  {} tensor(s){}\n", tensors.size(),
                    tensors.empty() ? "" : fmt::format(", in order: {}", fmt::join(tensors, ", ")));
  }
  out += fmt::format("  scalars: {}\n",
                     scalars.empty() ? "none" : fmt::format("{}", fmt::join(scalars, ", ")));
  if (outputs < 0) {
    out +=
        "  outputs: one per tensor of the returned list (its length is known only at run time)\n";
  } else {
    out += fmt::format(
        "  outputs: {} tensor(s); declare each with the shape and dtype forward "
        "returns\n",
        outputs);
  }
  std::vector<std::string> params;
  for (const auto& p : parameters) {
    params.push_back(
        fmt::format("{} [{}] {}", p.name, fmt::join(p.shape, ", "), c10::toString(p.dtype)));
  }
  out += fmt::format("  parameters: {}{}\n", parameters.size(),
                     params.empty() ? "" : fmt::format(" ({})", fmt::join(params, ", ")));
  out += "  training: ::parameters, ::functional, ::backward, ::spec (docs/torchscript.md)\n";
  if (mutates_state) out += "  note:    forward assigns module attributes: calls are serialized\n";
  if (mutates_inputs) out += "  note:    forward writes to its inputs: they are copied first\n";
  return out;
}

}  // namespace tb::backend::libtorch
