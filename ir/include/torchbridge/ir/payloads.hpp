// Every payload struct of burn-ir 0.22.1's and 0.23.0-pre.1's OperationIr trees (src/operation.rs),
// fields in wire order. Generated once from the crate sources, then kept by hand; the golden
// vectors check it. A struct whose layout changed between the versions holds the fields of both,
// and its FieldLayouts (at the end) says which belong to which; decoding fills in the other set.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "torchbridge/ir/types.hpp"

namespace tb::ir {

// Options and nested structs first: the op payloads below embed them.
TB_STRUCT(DeviceIdIr, (std::uint16_t, type_id), (std::uint16_t, index_id));
TB_STRUCT(Conv1dOptionsIr, (Usizes<1>, stride), (PaddingPairs<1>, padding), (Usizes<1>, dilation),
          (std::uint64_t, groups));
TB_STRUCT(Conv2dOptionsIr, (Usizes<2>, stride), (PaddingPairs<2>, padding), (Usizes<2>, dilation),
          (std::uint64_t, groups));
TB_STRUCT(DeformableConv2dOptionsIr, (Usizes<2>, stride), (Usizes<2>, padding),
          (Usizes<2>, dilation), (std::uint64_t, weight_groups), (std::uint64_t, offset_groups));
TB_STRUCT(Conv3dOptionsIr, (Usizes<3>, stride), (Usizes<3>, padding), (Usizes<3>, dilation),
          (std::uint64_t, groups));
TB_STRUCT(ConvTranspose1dOptionsIr, (Usizes<1>, stride), (Usizes<1>, padding),
          (Usizes<1>, padding_out), (Usizes<1>, dilation), (std::uint64_t, groups));
TB_STRUCT(ConvTranspose2dOptionsIr, (Usizes<2>, stride), (Usizes<2>, padding),
          (Usizes<2>, padding_out), (Usizes<2>, dilation), (std::uint64_t, groups));
TB_STRUCT(ConvTranspose3dOptionsIr, (Usizes<3>, stride), (Usizes<3>, padding),
          (Usizes<3>, padding_out), (Usizes<3>, dilation), (std::uint64_t, groups));
TB_STRUCT(QuantizationParametersIr, (TensorIr, scales), (std::optional<TensorIr>, global));
// CoordinateTransformModeIr: unit variants, or TfCropAndResize { roi, extrapolation_value }.
struct CoordinateTransformModeIr {
  CoordinateTransformKind kind = CoordinateTransformKind::HalfPixel;
  std::array<F32s<2>, 2> roi{};  // TfCropAndResize only
  float extrapolation_value = 0;
  friend bool operator==(const CoordinateTransformModeIr& a, const CoordinateTransformModeIr& b) {
    return a.kind == b.kind && (a.kind != CoordinateTransformKind::TfCropAndResize ||
                                (a.roi == b.roi && a.extrapolation_value == b.extrapolation_value));
  }
  friend bool operator!=(const CoordinateTransformModeIr& a, const CoordinateTransformModeIr& b) {
    return !(a == b);
  }
};
TB_STRUCT(CubicOptionsIr, (float, a), (bool, exclude_outside));
// 0.22.1: [mode, align_corners]; 0.23: [mode, coordinate_transform, nearest_mode, cubic_options,
// output_size?, scale_factor?].
TB_STRUCT(InterpolateOptionsIr, (InterpolateModeIr, mode), (bool, align_corners),
          (CoordinateTransformModeIr, coordinate_transform), (NearestRoundingModeIr, nearest_mode),
          (CubicOptionsIr, cubic_options), (std::optional<Usizes<2>>, output_size),
          (std::optional<F32s<2>>, scale_factor));
// 0.23 appended causal_alignment (absent: BottomRight).
TB_STRUCT(AttentionOptionsIr, (std::optional<ScalarIr>, scale), (std::optional<ScalarIr>, softcap),
          (bool, is_causal), (CausalAlignment, causal_alignment));
TB_STRUCT(GridSampleOptionsIr, (InterpolateModeIr, mode), (GridSamplePaddingModeIr, padding_mode),
          (bool, align_corners));
TB_STRUCT(Unfold4dOptionsIr, (Usizes<2>, stride), (Usizes<2>, padding), (Usizes<2>, dilation));

// Op payloads.
TB_STRUCT(CustomOpIr, (std::string, id), (std::vector<TensorIr>, inputs),
          (std::vector<TensorIr>, outputs), (std::vector<ScalarIr>, scalars));
TB_STRUCT(SwapDimsOpIr, (TensorIr, input), (TensorIr, out), (std::uint64_t, dim1),
          (std::uint64_t, dim2));
TB_STRUCT(PermuteOpIr, (TensorIr, input), (TensorIr, out), (std::vector<std::uint64_t>, axes));
TB_STRUCT(ShapeOpIr, (TensorIr, input), (TensorIr, out));
TB_STRUCT(UnfoldOpIr, (TensorIr, input), (TensorIr, out), (std::uint64_t, dim),
          (std::uint64_t, size), (std::uint64_t, step));
TB_STRUCT(FlipOpIr, (TensorIr, input), (TensorIr, out), (std::vector<std::uint64_t>, axes));
TB_STRUCT(PadOpIr, (TensorIr, input), (TensorIr, out), (std::vector<UsizePair>, padding),
          (PadModeIr, mode));
TB_STRUCT(RandomOpIr, (TensorIr, out), (Distribution, distribution));
TB_STRUCT(CreationOpIr, (TensorIr, out));
TB_STRUCT(FullOpIr, (TensorIr, out), (ScalarIr, value));
TB_STRUCT(InitOperationIr, (TensorIr, out));
TB_STRUCT(BinaryOpIr, (TensorIr, lhs), (TensorIr, rhs), (TensorIr, out));
TB_STRUCT(MatmulOpIr, (TensorIr, lhs), (TensorIr, rhs), (TensorIr, out));
TB_STRUCT(CrossOpIr, (TensorIr, lhs), (TensorIr, rhs), (TensorIr, out), (std::uint64_t, dim));
TB_STRUCT(UnaryOpIr, (TensorIr, input), (TensorIr, out));
TB_STRUCT(ScalarOpIr, (TensorIr, lhs), (ScalarIr, rhs), (TensorIr, out));
TB_STRUCT(ReduceOpIr, (TensorIr, input), (TensorIr, out));
TB_STRUCT(ReduceDimOpIr, (TensorIr, input), (TensorIr, out), (std::uint64_t, axis),
          (std::uint64_t, accumulator_len));
TB_STRUCT(ReduceDimsOpIr, (TensorIr, input), (TensorIr, out), (std::vector<std::uint64_t>, axes));
TB_STRUCT(CastOpIr, (TensorIr, input), (TensorIr, out));
TB_STRUCT(DimOpIr, (TensorIr, input), (TensorIr, out), (std::uint64_t, axis));
TB_STRUCT(GatherOpIr, (TensorIr, tensor), (std::uint64_t, dim), (TensorIr, indices),
          (TensorIr, out));
TB_STRUCT(ScatterOpIr, (TensorIr, tensor), (std::uint64_t, dim), (TensorIr, indices),
          (TensorIr, value), (IndexingUpdateOp, update), (TensorIr, out));
TB_STRUCT(ScatterNdOpIr, (TensorIr, data), (TensorIr, indices), (TensorIr, values),
          (IndexingUpdateOp, reduction), (TensorIr, out));
TB_STRUCT(GatherNdOpIr, (TensorIr, data), (TensorIr, indices), (TensorIr, out));
TB_STRUCT(SelectOpIr, (TensorIr, tensor), (std::uint64_t, dim), (TensorIr, indices),
          (TensorIr, out));
TB_STRUCT(SelectAssignOpIr, (TensorIr, tensor), (std::uint64_t, dim), (TensorIr, indices),
          (TensorIr, value), (IndexingUpdateOp, update), (TensorIr, out));
TB_STRUCT(SliceOpIr, (TensorIr, tensor), (std::vector<Slice>, ranges), (TensorIr, out));
TB_STRUCT(SliceAssignOpIr, (TensorIr, tensor), (std::vector<Slice>, ranges), (TensorIr, value),
          (TensorIr, out));
TB_STRUCT(MaskWhereOpIr, (TensorIr, tensor), (TensorIr, mask), (TensorIr, value), (TensorIr, out));
TB_STRUCT(MaskFillOpIr, (TensorIr, tensor), (TensorIr, mask), (ScalarIr, value), (TensorIr, out));
TB_STRUCT(ClampOpIr, (TensorIr, tensor), (ScalarIr, min), (ScalarIr, max), (TensorIr, out));
TB_STRUCT(RepeatDimOpIr, (TensorIr, tensor), (std::uint64_t, dim), (std::uint64_t, times),
          (TensorIr, out));
TB_STRUCT(CatOpIr, (std::vector<TensorIr>, tensors), (std::uint64_t, dim), (TensorIr, out));
TB_STRUCT(AllReduceOpIr, (TensorIr, tensor), (TensorIr, out), (ReduceOperation, op),
          (std::vector<DeviceIdIr>, device_ids));
TB_STRUCT(ReduceDimWithIndicesOpIr, (TensorIr, tensor), (std::uint64_t, dim), (TensorIr, out),
          (TensorIr, out_indices));
TB_STRUCT(TopKWithIndicesOpIr, (TensorIr, tensor), (std::uint64_t, dim), (std::uint64_t, k),
          (TensorIr, out), (TensorIr, out_indices));
TB_STRUCT(EmbeddingOpIr, (TensorIr, weights), (TensorIr, indices), (TensorIr, out));
TB_STRUCT(EmbeddingBackwardOpIr, (TensorIr, weights), (TensorIr, out_grad), (TensorIr, indices),
          (TensorIr, out));
TB_STRUCT(BatchNormOpIr, (TensorIr, x), (TensorIr, gamma), (TensorIr, beta), (TensorIr, mean),
          (TensorIr, variance), (ScalarIr, epsilon), (TensorIr, out));
TB_STRUCT(LinearOpIr, (TensorIr, x), (TensorIr, weight), (std::optional<TensorIr>, bias),
          (TensorIr, out));
TB_STRUCT(LinearXBackwardOpIr, (TensorIr, weight), (TensorIr, output_grad), (TensorIr, out));
TB_STRUCT(LinearWeightBackwardOpIr, (TensorIr, x), (TensorIr, output_grad), (TensorIr, out));
TB_STRUCT(LinearBiasBackwardOpIr, (TensorIr, output_grad), (TensorIr, out));
TB_STRUCT(Conv1dOpIr, (TensorIr, x), (TensorIr, weight), (std::optional<TensorIr>, bias),
          (Conv1dOptionsIr, options), (TensorIr, out));
TB_STRUCT(Conv1dXBackwardOpIr, (TensorIr, x), (TensorIr, weight), (TensorIr, output_grad),
          (Conv1dOptionsIr, options), (TensorIr, out));
TB_STRUCT(Conv1dWeightBackwardOpIr, (TensorIr, x), (TensorIr, weight), (TensorIr, output_grad),
          (Conv1dOptionsIr, options), (TensorIr, out));
TB_STRUCT(Conv1dBiasBackwardOpIr, (TensorIr, x), (TensorIr, bias), (TensorIr, output_grad),
          (TensorIr, out));
TB_STRUCT(Conv2dOpIr, (TensorIr, x), (TensorIr, weight), (std::optional<TensorIr>, bias),
          (Conv2dOptionsIr, options), (TensorIr, out));
TB_STRUCT(Conv2dXBackwardOpIr, (TensorIr, x), (TensorIr, weight), (TensorIr, output_grad),
          (Conv2dOptionsIr, options), (TensorIr, out));
TB_STRUCT(Conv2dWeightBackwardOpIr, (TensorIr, x), (TensorIr, weight), (TensorIr, output_grad),
          (Conv2dOptionsIr, options), (TensorIr, out));
TB_STRUCT(Conv2dBiasBackwardOpIr, (TensorIr, x), (TensorIr, bias), (TensorIr, output_grad),
          (TensorIr, out));
TB_STRUCT(DeformConv2dOpIr, (TensorIr, x), (TensorIr, offset), (TensorIr, weight),
          (std::optional<TensorIr>, mask), (std::optional<TensorIr>, bias),
          (DeformableConv2dOptionsIr, options), (TensorIr, out));
TB_STRUCT(DeformConv2dBackwardOpIr, (TensorIr, x), (TensorIr, offset), (TensorIr, weight),
          (std::optional<TensorIr>, mask), (std::optional<TensorIr>, bias), (TensorIr, out_grad),
          (DeformableConv2dOptionsIr, options), (TensorIr, input_grad), (TensorIr, offset_grad),
          (TensorIr, weight_grad), (std::optional<TensorIr>, mask_grad),
          (std::optional<TensorIr>, bias_grad));
TB_STRUCT(Conv3dOpIr, (TensorIr, x), (TensorIr, weight), (std::optional<TensorIr>, bias),
          (Conv3dOptionsIr, options), (TensorIr, out));
TB_STRUCT(Conv3dXBackwardOpIr, (TensorIr, x), (TensorIr, weight), (TensorIr, output_grad),
          (Conv3dOptionsIr, options), (TensorIr, out));
TB_STRUCT(Conv3dWeightBackwardOpIr, (TensorIr, x), (TensorIr, weight), (TensorIr, output_grad),
          (Conv3dOptionsIr, options), (TensorIr, out));
TB_STRUCT(Conv3dBiasBackwardOpIr, (TensorIr, x), (TensorIr, bias), (TensorIr, output_grad),
          (TensorIr, out));
TB_STRUCT(ConvTranspose1dOpIr, (TensorIr, x), (TensorIr, weight), (std::optional<TensorIr>, bias),
          (ConvTranspose1dOptionsIr, options), (TensorIr, out));
TB_STRUCT(ConvTranspose2dOpIr, (TensorIr, x), (TensorIr, weight), (std::optional<TensorIr>, bias),
          (ConvTranspose2dOptionsIr, options), (TensorIr, out));
TB_STRUCT(ConvTranspose3dOpIr, (TensorIr, x), (TensorIr, weight), (std::optional<TensorIr>, bias),
          (ConvTranspose3dOptionsIr, options), (TensorIr, out));
TB_STRUCT(QuantizeOpIr, (TensorIr, tensor), (QuantizationParametersIr, qparams),
          (QuantScheme, scheme), (TensorIr, out));
TB_STRUCT(DequantizeOpIr, (TensorIr, input), (TensorIr, out));
// The avg pools: 0.23 inserted `dilation` after `padding` (absent: 1).
TB_STRUCT(AvgPool1dOpIr, (TensorIr, x), (std::uint64_t, kernel_size), (std::uint64_t, stride),
          (std::uint64_t, padding), (std::uint64_t, dilation), (bool, count_include_pad),
          (bool, ceil_mode), (TensorIr, out));
TB_STRUCT(AvgPool2dOpIr, (TensorIr, x), (Usizes<2>, kernel_size), (Usizes<2>, stride),
          (Usizes<2>, padding), (Usizes<2>, dilation), (bool, count_include_pad), (bool, ceil_mode),
          (TensorIr, out));
TB_STRUCT(AvgPool3dOpIr, (TensorIr, x), (Usizes<3>, kernel_size), (Usizes<3>, stride),
          (Usizes<3>, padding), (Usizes<3>, dilation), (bool, count_include_pad), (bool, ceil_mode),
          (TensorIr, out));
TB_STRUCT(AvgPool1dBackwardOpIr, (TensorIr, x), (TensorIr, grad), (std::uint64_t, kernel_size),
          (std::uint64_t, stride), (std::uint64_t, padding), (std::uint64_t, dilation),
          (bool, count_include_pad), (bool, ceil_mode), (TensorIr, out));
TB_STRUCT(AvgPool2dBackwardOpIr, (TensorIr, x), (TensorIr, grad), (Usizes<2>, kernel_size),
          (Usizes<2>, stride), (Usizes<2>, padding), (Usizes<2>, dilation),
          (bool, count_include_pad), (bool, ceil_mode), (TensorIr, out));
TB_STRUCT(AvgPool3dBackwardOpIr, (TensorIr, x), (TensorIr, grad), (Usizes<3>, kernel_size),
          (Usizes<3>, stride), (Usizes<3>, padding), (Usizes<3>, dilation),
          (bool, count_include_pad), (bool, ceil_mode), (TensorIr, out));
TB_STRUCT(AdaptiveAvgPool1dOpIr, (TensorIr, x), (std::uint64_t, output_size), (TensorIr, out));
TB_STRUCT(AdaptiveAvgPool2dOpIr, (TensorIr, x), (Usizes<2>, output_size), (TensorIr, out));
TB_STRUCT(AdaptiveAvgPool1dBackwardOpIr, (TensorIr, x), (TensorIr, grad), (TensorIr, out));
TB_STRUCT(AdaptiveAvgPool2dBackwardOpIr, (TensorIr, x), (TensorIr, grad), (TensorIr, out));
TB_STRUCT(AdaptiveAvgPool3dOpIr, (TensorIr, x), (Usizes<3>, output_size), (TensorIr, out));
TB_STRUCT(AdaptiveAvgPool3dBackwardOpIr, (TensorIr, x), (TensorIr, grad), (TensorIr, out));
TB_STRUCT(MaxPool1dOpIr, (TensorIr, x), (std::uint64_t, kernel_size), (std::uint64_t, stride),
          (std::uint64_t, padding), (std::uint64_t, dilation), (bool, ceil_mode), (TensorIr, out));
TB_STRUCT(MaxPool1dWithIndicesOpIr, (TensorIr, x), (std::uint64_t, kernel_size),
          (std::uint64_t, stride), (std::uint64_t, padding), (std::uint64_t, dilation),
          (bool, ceil_mode), (TensorIr, out), (TensorIr, out_indices));
TB_STRUCT(MaxPool1dWithIndicesBackwardOpIr, (TensorIr, x), (TensorIr, grad), (TensorIr, indices),
          (std::uint64_t, kernel_size), (std::uint64_t, stride), (std::uint64_t, padding),
          (std::uint64_t, dilation), (bool, ceil_mode), (TensorIr, out));
TB_STRUCT(MaxPool2dOpIr, (TensorIr, x), (Usizes<2>, kernel_size), (Usizes<2>, stride),
          (Usizes<2>, padding), (Usizes<2>, dilation), (bool, ceil_mode), (TensorIr, out));
TB_STRUCT(MaxPool2dWithIndicesOpIr, (TensorIr, x), (Usizes<2>, kernel_size), (Usizes<2>, stride),
          (Usizes<2>, padding), (Usizes<2>, dilation), (bool, ceil_mode), (TensorIr, out),
          (TensorIr, out_indices));
TB_STRUCT(MaxPool2dWithIndicesBackwardOpIr, (TensorIr, x), (TensorIr, grad), (TensorIr, indices),
          (Usizes<2>, kernel_size), (Usizes<2>, stride), (Usizes<2>, padding),
          (Usizes<2>, dilation), (bool, ceil_mode), (TensorIr, out));
TB_STRUCT(MaxPool3dOpIr, (TensorIr, x), (Usizes<3>, kernel_size), (Usizes<3>, stride),
          (Usizes<3>, padding), (Usizes<3>, dilation), (bool, ceil_mode), (TensorIr, out));
TB_STRUCT(MaxPool3dWithIndicesOpIr, (TensorIr, x), (Usizes<3>, kernel_size), (Usizes<3>, stride),
          (Usizes<3>, padding), (Usizes<3>, dilation), (bool, ceil_mode), (TensorIr, out),
          (TensorIr, out_indices));
TB_STRUCT(MaxPool3dWithIndicesBackwardOpIr, (TensorIr, x), (TensorIr, grad), (TensorIr, indices),
          (Usizes<3>, kernel_size), (Usizes<3>, stride), (Usizes<3>, padding),
          (Usizes<3>, dilation), (bool, ceil_mode), (TensorIr, out));
TB_STRUCT(InterpolateOpIr, (TensorIr, x), (Usizes<2>, output_size), (InterpolateOptionsIr, options),
          (TensorIr, out));
TB_STRUCT(AttentionOpIr, (TensorIr, query), (TensorIr, key), (TensorIr, value),
          (std::optional<TensorIr>, mask), (std::optional<TensorIr>, attn_bias),
          (AttentionOptionsIr, options), (TensorIr, out));
// `logsumexp` is [batch, heads, seq_q] and always F32 (burn-ir 0.23.0-pre.1 src/builder.rs).
TB_STRUCT(AttentionWithLogsumexpOpIr, (TensorIr, query), (TensorIr, key), (TensorIr, value),
          (AttentionOptionsIr, options), (TensorIr, out), (TensorIr, logsumexp));
TB_STRUCT(AttentionBackwardOpIr, (TensorIr, query), (TensorIr, key), (TensorIr, value),
          (TensorIr, out), (TensorIr, logsumexp), (TensorIr, out_grad),
          (AttentionOptionsIr, options), (TensorIr, query_grad), (TensorIr, key_grad),
          (TensorIr, value_grad));
TB_STRUCT(CtcLossOpIr, (TensorIr, log_probs), (TensorIr, targets), (TensorIr, input_lengths),
          (TensorIr, target_lengths), (std::uint64_t, blank), (TensorIr, out));
TB_STRUCT(CtcLossBackwardOpIr, (TensorIr, log_probs), (TensorIr, targets),
          (TensorIr, input_lengths), (TensorIr, target_lengths), (TensorIr, grad_loss),
          (std::uint64_t, blank), (TensorIr, out));
TB_STRUCT(InterpolateBackwardOpIr, (TensorIr, x), (TensorIr, grad), (Usizes<2>, output_size),
          (InterpolateOptionsIr, options), (TensorIr, out));
TB_STRUCT(GridSample2dOpIr, (TensorIr, tensor), (TensorIr, grid), (GridSampleOptionsIr, options),
          (TensorIr, out));
TB_STRUCT(SortOpIr, (TensorIr, input), (std::uint64_t, dim), (bool, descending), (TensorIr, out));
TB_STRUCT(SortWithIndicesOpIr, (TensorIr, input), (std::uint64_t, dim), (bool, descending),
          (TensorIr, out), (TensorIr, out_indices));
TB_STRUCT(LayerNormOpIr, (TensorIr, input), (TensorIr, gamma), (std::optional<TensorIr>, beta),
          (ScalarIr, epsilon), (TensorIr, out));
TB_STRUCT(Unfold4dOpIr, (TensorIr, x), (Usizes<2>, kernel_size), (Unfold4dOptionsIr, options),
          (TensorIr, out));
TB_STRUCT(ConvTranspose1dWeightBackwardOpIr, (TensorIr, x), (TensorIr, weight),
          (TensorIr, output_grad), (ConvTranspose1dOptionsIr, options), (TensorIr, out));
TB_STRUCT(ConvTranspose1dBiasBackwardOpIr, (TensorIr, x), (TensorIr, bias), (TensorIr, output_grad),
          (TensorIr, out));
TB_STRUCT(ConvTranspose2dWeightBackwardOpIr, (TensorIr, x), (TensorIr, weight),
          (TensorIr, output_grad), (ConvTranspose2dOptionsIr, options), (TensorIr, out));
TB_STRUCT(ConvTranspose2dBiasBackwardOpIr, (TensorIr, x), (TensorIr, bias), (TensorIr, output_grad),
          (TensorIr, out));
TB_STRUCT(ConvTranspose3dWeightBackwardOpIr, (TensorIr, x), (TensorIr, weight),
          (TensorIr, output_grad), (ConvTranspose3dOptionsIr, options), (TensorIr, out));
TB_STRUCT(ConvTranspose3dBiasBackwardOpIr, (TensorIr, x), (TensorIr, bias), (TensorIr, output_grad),
          (TensorIr, out));
TB_STRUCT(HardSigmoidOpIr, (TensorIr, tensor), (ScalarIr, alpha), (ScalarIr, beta),
          (TensorIr, out));

// The payload of a unit variant (Distributed::SyncCollective).
struct UnitPayload {
  friend bool operator==(const UnitPayload&, const UnitPayload&) { return true; }
  friend bool operator!=(const UnitPayload&, const UnitPayload&) { return false; }
};

// ---- Layouts that changed at protocol 6 (Burn 0.23) -----------------------------------------
// The default options of an interpolate mode (burn-std 0.23 InterpolateOptions::new), which are
// 0.22.1's semantics: Nearest floors, NearestExact rounds half up, the others align corners or
// not as align_corners says (0.22.1's only choice).
inline void complete_interpolate_options(InterpolateOptionsIr& v, bool old_layout) {
  if (!old_layout) {
    v.align_corners = v.coordinate_transform.kind == CoordinateTransformKind::AlignCorners;
    return;
  }
  v.coordinate_transform = {};
  v.cubic_options = {-0.75f, false};
  v.output_size.reset();
  v.scale_factor.reset();
  switch (v.mode) {
    case InterpolateModeIr::Nearest:
      v.coordinate_transform.kind = CoordinateTransformKind::Asymmetric;
      v.nearest_mode = NearestRoundingModeIr::Floor;
      break;
    case InterpolateModeIr::NearestExact:
      v.coordinate_transform.kind = CoordinateTransformKind::HalfPixel;
      v.nearest_mode = NearestRoundingModeIr::RoundPreferCeil;
      break;
    default:
      v.coordinate_transform.kind = v.align_corners ? CoordinateTransformKind::AlignCorners
                                                    : CoordinateTransformKind::HalfPixel;
      v.nearest_mode = NearestRoundingModeIr::RoundPreferFloor;
  }
}

// 0.22.1's options (mode, align_corners) in the fields both versions' IR is read from.
inline InterpolateOptionsIr interpolate_options_v2(InterpolateModeIr mode, bool align_corners) {
  InterpolateOptionsIr v;
  v.mode = mode;
  v.align_corners = align_corners;
  complete_interpolate_options(v, true);
  return v;
}

template <>
struct FieldLayouts<InterpolateOptionsIr> {
  static constexpr std::uint16_t kSince = 6;
  static constexpr std::uint64_t kOld = field_bits<InterpolateOptionsIr>({"align_corners"});
  static constexpr std::uint64_t kNew = field_bits<InterpolateOptionsIr>(
      {"coordinate_transform", "nearest_mode", "cubic_options", "output_size", "scale_factor"});
  static void complete(InterpolateOptionsIr& v, bool old_layout) {
    complete_interpolate_options(v, old_layout);
  }
};

template <>
struct FieldLayouts<AttentionOptionsIr> {
  static constexpr std::uint16_t kSince = 6;
  static constexpr std::uint64_t kOld = 0;
  static constexpr std::uint64_t kNew = field_bits<AttentionOptionsIr>({"causal_alignment"});
  static void complete(AttentionOptionsIr& v, bool old_layout) {
    if (old_layout) v.causal_alignment = CausalAlignment::BottomRight;
  }
};

// The avg pools' dilation, 1 where the layout has none.
#define TB_DILATION_SINCE_6(Name, one)                                    \
  template <>                                                             \
  struct FieldLayouts<Name> {                                             \
    static constexpr std::uint16_t kSince = 6;                            \
    static constexpr std::uint64_t kOld = 0;                              \
    static constexpr std::uint64_t kNew = field_bits<Name>({"dilation"}); \
    static void complete(Name& v, bool old_layout) {                      \
      if (old_layout) v.dilation = one;                                   \
    }                                                                     \
  };
TB_DILATION_SINCE_6(AvgPool1dOpIr, 1)
TB_DILATION_SINCE_6(AvgPool1dBackwardOpIr, 1)
TB_DILATION_SINCE_6(AvgPool2dOpIr, (Usizes<2>{1, 1}))
TB_DILATION_SINCE_6(AvgPool2dBackwardOpIr, (Usizes<2>{1, 1}))
#undef TB_DILATION_SINCE_6

}  // namespace tb::ir
