// Every payload struct of burn-ir 0.22.1's OperationIr tree (src/operation.rs), fields in wire
// order. Generated once from the crate source, then kept by hand; the golden vectors check it.
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
TB_STRUCT(InterpolateOptionsIr, (InterpolateModeIr, mode), (bool, align_corners));
TB_STRUCT(AttentionOptionsIr, (std::optional<ScalarIr>, scale), (std::optional<ScalarIr>, softcap),
          (bool, is_causal));
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
TB_STRUCT(AvgPool1dOpIr, (TensorIr, x), (std::uint64_t, kernel_size), (std::uint64_t, stride),
          (std::uint64_t, padding), (bool, count_include_pad), (bool, ceil_mode), (TensorIr, out));
TB_STRUCT(AvgPool2dOpIr, (TensorIr, x), (Usizes<2>, kernel_size), (Usizes<2>, stride),
          (Usizes<2>, padding), (bool, count_include_pad), (bool, ceil_mode), (TensorIr, out));
TB_STRUCT(AvgPool1dBackwardOpIr, (TensorIr, x), (TensorIr, grad), (std::uint64_t, kernel_size),
          (std::uint64_t, stride), (std::uint64_t, padding), (bool, count_include_pad),
          (bool, ceil_mode), (TensorIr, out));
TB_STRUCT(AvgPool2dBackwardOpIr, (TensorIr, x), (TensorIr, grad), (Usizes<2>, kernel_size),
          (Usizes<2>, stride), (Usizes<2>, padding), (bool, count_include_pad), (bool, ceil_mode),
          (TensorIr, out));
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
TB_STRUCT(InterpolateOpIr, (TensorIr, x), (Usizes<2>, output_size), (InterpolateOptionsIr, options),
          (TensorIr, out));
TB_STRUCT(AttentionOpIr, (TensorIr, query), (TensorIr, key), (TensorIr, value),
          (std::optional<TensorIr>, mask), (std::optional<TensorIr>, attn_bias),
          (AttentionOptionsIr, options), (TensorIr, out));
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

}  // namespace tb::ir
