// AOTInductor packages as custom ops (see aoti.hpp for the calling convention).
//
// Input checks: the code AOTInductor generates checks every input's dtype, sizes (dynamic ones
// against their range), strides and device before a run, but only when the environment variable
// AOTI_RUNTIME_CHECK_INPUTS is set, read once per process at the first run. Without the checks a
// client's wrongly shaped tensor would be read out of bounds by compiled kernels, so the host sets
// it (overriding any value) before it loads a package, and makes every input contiguous, the
// strides the checks expect of a user input.
//
// Concurrency: AOTIModelPackageLoader::run is thread-safe (the container hands each call a model
// instance from its pool and waits for one when all are busy): sessions share one loaded package
// per device.
#include "torchbridge/libtorch/aoti.hpp"

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/version.h>

#include "models/aoti_inputs.hpp"
#include "runtime/aten_guard.hpp"
#include "torchbridge/libtorch/torchscript.hpp"

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 8)
#define TB_HAVE_AOTI 1
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#else
#define TB_HAVE_AOTI 0
#endif

namespace tb::backend::libtorch {

bool aoti_supported() {
  return TB_HAVE_AOTI != 0;
}

bool is_aoti_package(const std::string& path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".pt2") == 0;
}

std::string AotiSignature::describe() const {
  std::string out = fmt::format("  {}\n", schema);
  out += fmt::format("  format:  AOTInductor package, compiled for {}{}\n", device_type,
                     cpu_isa.empty() ? "" : fmt::format(" ({})", cpu_isa));
  std::vector<std::string> shown;
  for (const auto& in : input_checks) {
    shown.push_back(fmt::format("{} [{}]", in.dtype, fmt::join(in.dims, ", ")));
  }
  out += fmt::format(
      "  inputs:  {} tensor(s), in order: {} (a range is a dynamic dimension); the host checks "
      "each\n",
      inputs, fmt::join(shown, ", "));
  out += "  scalars: none (torch.export fixed non-tensor arguments when the model was exported)\n";
  out += fmt::format(
      "  outputs: {} tensor(s); declare each with the shape and dtype the exported program "
      "returns\n",
      outputs);
  out += fmt::format("  constants: {}{}\n", constants.size(),
                     constants.empty() ? "" : fmt::format(" ({})", fmt::join(constants, ", ")));
  out +=
      "  training: none; an AOTInductor package is inference only (serve a TorchScript module "
      "for the training contract)\n";
  return out;
}

#if TB_HAVE_AOTI

namespace {

using Loader = torch::inductor::AOTIModelPackageLoader;

// The training contract's ids, each answering that a package cannot serve it.
std::vector<std::pair<std::string, CustomOpHandler>> inference_only_ops(const std::string& name,
                                                                        const std::string& path) {
  std::vector<std::pair<std::string, CustomOpHandler>> ops;
  for (const char* suffix : {kParametersSuffix, kFunctionalSuffix, kBackwardSuffix, kSpecSuffix}) {
    const std::string id = name + suffix;
    ops.emplace_back(id, [id, path](const CustomOpCall&) -> Result<std::vector<at::Tensor>> {
      return make_error(ErrorCode::kUnsupported,
                        "custom op {}: {} is an AOTInductor package, served for inference only; "
                        "the training contract needs the model as a TorchScript module "
                        "(docs/torchscript.md)",
                        id, path);
    });
  }
  return ops;
}

// The leaves of a serialized pytree spec (torch.utils._pytree.treespec_dumps: a leaf is the node
// {"type": null, ...}).
int pytree_leaves(const std::string& spec) {
  static const std::regex leaf(R"re("type"\s*:\s*null)re");
  return static_cast<int>(
      std::distance(std::sregex_iterator(spec.begin(), spec.end(), leaf), std::sregex_iterator()));
}

// Instruction sets named in AOTI_CPU_ISA that this CPU lacks: compiled kernels using them would
// die of SIGILL at the first call.
std::vector<std::string> missing_isa(const std::string& isa) {
  std::vector<std::string> missing;
#if defined(__x86_64__)
  std::istringstream words(isa);
  for (std::string w; words >> w;) {
    bool have = true;
    if (w == "AVX512") {
      have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    } else if (w == "AVX512_VNNI") {
      have = __builtin_cpu_supports("avx512vnni");
    } else if (w == "AVX2") {
      have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    if (!have) missing.push_back(w);
  }
#else
  (void)isa;
#endif
  return missing;
}

std::string metadata_value(const std::unordered_map<std::string, std::string>& m,
                           const std::string& key) {
  const auto it = m.find(key);
  return it == m.end() ? std::string() : it->second;
}

struct LoadedPackage {
  std::string path;
  AotiSignature signature;
  std::map<std::string, std::shared_ptr<Loader>> by_device;
};

// The package's metadata, checked against `device` (nullptr: its own device type) and this CPU.
Result<AotiSignature> check_package(const std::string& path, const at::Device* device) {
  if (!std::ifstream(path)) {
    return make_error(ErrorCode::kNotFound, "cannot open AOTInductor package {}", path);
  }
  TB_TRY_ASSIGN(const auto metadata,
                aten_guard(ErrorCode::kInvalidArgument,
                           fmt::format("cannot read AOTInductor package {}", path),
                           [&] { return Loader::load_metadata_from_package(path, "model"); }));
  AotiSignature sig;
  sig.device_type = metadata_value(metadata, "AOTI_DEVICE_KEY");
  sig.cpu_isa = metadata_value(metadata, "AOTI_CPU_ISA");
  if (device != nullptr && sig.device_type != c10::DeviceTypeName(device->type(), true)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "AOTInductor package {} was compiled for {}, not for device {}: export and "
                      "compile it on the device it is to run on",
                      path, sig.device_type.empty() ? "an unknown device" : sig.device_type,
                      device->str());
  }
  if (const auto missing = missing_isa(sig.cpu_isa); !missing.empty()) {
    return make_error(ErrorCode::kUnsupported,
                      "AOTInductor package {} was compiled for CPU instructions this machine "
                      "lacks ({}): compile it on a machine like this one",
                      path, fmt::join(missing, ", "));
  }
  return sig;
}

Result<std::shared_ptr<Loader>> load_package(const std::string& path, const at::Device& device) {
  // Before the first run of any package in this process (see the file comment).
  setenv("AOTI_RUNTIME_CHECK_INPUTS", "1", 1);
  return aten_guard(
      ErrorCode::kInvalidArgument, fmt::format("cannot load AOTInductor package {}", path), [&] {
        return std::make_shared<Loader>(path, "model", /*run_single_threaded=*/false,
                                        /*num_runners=*/1,
                                        device.is_cpu() ? c10::DeviceIndex(-1) : device.index());
      });
}

// The package's wrapper source (aoti_inputs.hpp says why the host reads it).
Result<std::string> wrapper_source(const std::string& path) {
  return aten_guard(ErrorCode::kInvalidArgument, "reading its wrapper source", [&] {
    caffe2::serialize::PyTorchStreamReader reader(path);
    const std::string dir = "data/aotinductor/model/";
    const std::string suffix = ".wrapper.cpp";
    for (const auto& name : reader.getAllRecords()) {
      if (name.size() > dir.size() + suffix.size() && name.compare(0, dir.size(), dir) == 0 &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        auto [data, size] = reader.getRecord(name);
        return std::string(static_cast<const char*>(data.get()), size);
      }
    }
    return std::string();
  });
}

Status fill_signature(const std::string& path, Loader& loader, AotiSignature& sig) {
  TB_TRY_ASSIGN(const auto spec, aten_guard(ErrorCode::kInvalidArgument, "call spec",
                                            [&] { return loader.get_call_spec(); }));
  if (spec.size() != 2) {
    return make_error(ErrorCode::kInvalidArgument, "the package's call spec has {} parts, not 2",
                      spec.size());
  }
  sig.inputs = pytree_leaves(spec[0]);
  sig.outputs = pytree_leaves(spec[1]);
  TB_TRY_ASSIGN(const std::string source, wrapper_source(path));
  if (source.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the package has no wrapper source (data/aotinductor/model/*.wrapper.cpp), "
                      "whose input checks tell the host the rank of each input it takes");
  }
  TB_TRY_ASSIGN(sig.input_checks, detail::parse_input_checks(source, sig.inputs));
  TB_TRY_ASSIGN(sig.constants, aten_guard(ErrorCode::kInvalidArgument, "constants",
                                          [&] { return loader.get_constant_fqns(); }));
  sig.schema = fmt::format("forward({} tensor{}) -> {} tensor{}", sig.inputs,
                           sig.inputs == 1 ? "" : "s", sig.outputs, sig.outputs == 1 ? "" : "s");
  return ok();
}

// What one loaded copy holds in constants (weights and buffers).
Result<std::uint64_t> constant_bytes(Loader& loader) {
  return aten_guard(ErrorCode::kInvalidArgument, "constants", [&] {
    std::uint64_t bytes = 0;
    for (const auto& [name, t] :
         loader.get_runner()->extract_constants_map(/*use_inactive=*/false)) {
      if (t.defined()) bytes += t.nbytes();
    }
    return bytes;
  });
}

Result<std::vector<at::Tensor>> call_package(const LoadedPackage& p, const CustomOpCall& call) {
  const auto it = p.by_device.find(call.device.str());
  if (it == p.by_device.end()) {
    return make_error(ErrorCode::kNotFound, "AOTInductor package {} was not loaded on device {}",
                      p.path, call.device.str());
  }
  if (!call.op.scalars.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "{} takes no scalars (torch.export fixed them), the op passes {}",
                      p.signature.schema, call.op.scalars.size());
  }
  if (call.inputs.size() != static_cast<std::size_t>(p.signature.inputs)) {
    return make_error(ErrorCode::kInvalidArgument, "{} takes {} tensor input(s), the op passes {}",
                      p.signature.schema, p.signature.inputs, call.inputs.size());
  }
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    const AotiInput& want = p.signature.input_checks[i];
    if (call.inputs[i].dim() != static_cast<int64_t>(want.dims.size())) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: input {} has rank {}, the package takes {} [{}]", p.signature.schema,
                        i, call.inputs[i].dim(), want.dtype, fmt::join(want.dims, ", "));
    }
  }
  Loader& loader = *it->second;
  return aten_guard(fmt::format("model {} raised", p.path), [&] {
    // A package's parallel kernels take the calling thread's OpenMP thread count (unless compiled
    // with inductor's cpp.threads): make it ATen's, the host's --threads, in this session thread.
    at::init_num_threads();
    // Copies: the input checks want contiguous strides, and an exported program may write to its
    // inputs, which other handles of the session may share.
    std::vector<at::Tensor> inputs;
    inputs.reserve(call.inputs.size());
    for (const auto& t : call.inputs) inputs.push_back(t.clone(at::MemoryFormat::Contiguous));
    return loader.boxed_run(std::move(inputs));
  });
}

}  // namespace

Result<AotiOp> load_aoti_op(const std::string& name, const std::string& path,
                            const std::vector<std::string>& devices) {
  auto loaded = std::make_shared<LoadedPackage>();
  loaded->path = path;
  std::uint64_t weight_bytes = 0;
  for (const auto& device_name : devices) {
    if (loaded->by_device.count(device_name)) continue;
    TB_TRY_ASSIGN(const at::Device device, parse_device(device_name));
    TB_TRY_ASSIGN(auto sig, check_package(path, &device));
    TB_TRY_ASSIGN(auto loader, load_package(path, device));
    if (loaded->by_device.empty()) {
      if (auto s = fill_signature(path, *loader, sig); !s) {
        return with_context(s.error(), fmt::format("AOTInductor package {}", path));
      }
      loaded->signature = std::move(sig);
      TB_TRY_ASSIGN(weight_bytes, constant_bytes(*loader));
    }
    loaded->by_device.emplace(device_name, std::move(loader));
  }
  if (loaded->by_device.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "model {}: no device to load it on", path);
  }
  AotiOp op;
  op.signature = loaded->signature;
  op.handler = [loaded](const CustomOpCall& call) { return call_package(*loaded, call); };
  op.training = inference_only_ops(name, path);
  op.weight_bytes = weight_bytes;
  return op;
}

Result<AotiSignature> describe_aoti(const std::string& path) {
  TB_TRY_ASSIGN(auto sig, check_package(path, nullptr));
  TB_TRY_ASSIGN(const at::Device device, parse_device(sig.device_type));
  TB_TRY_ASSIGN(auto loader, load_package(path, device));
  if (auto s = fill_signature(path, *loader, sig); !s) {
    return with_context(s.error(), fmt::format("AOTInductor package {}", path));
  }
  return sig;
}

#else  // LibTorch before 2.8: no AOTInductor package loader.

namespace {

Error unsupported(const std::string& path) {
  return make_error(
      ErrorCode::kUnsupported,
      "{}: AOTInductor packages (.pt2) need LibTorch 2.8 or later; this torchbridge "
      "is built on LibTorch {} (docs/libtorch.md says how to build against PyTorch's)",
      path, torch_version());
}

}  // namespace

Result<AotiOp> load_aoti_op(const std::string&, const std::string& path,
                            const std::vector<std::string>&) {
  return unsupported(path);
}

Result<AotiSignature> describe_aoti(const std::string& path) {
  return unsupported(path);
}

#endif

}  // namespace tb::backend::libtorch
