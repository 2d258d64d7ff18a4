// The msgpack codec for Burn's wire values, byte-compatible with rmp-serde's default config.
//
// decode<T> never throws and never reads past its buffer; its errors carry the path into the
// value ("Task > RegisterOperation[1] > NumericFloat[1] > AddScalar > rhs: expected map, got ...").
// encode<T> writes the canonical form Burn itself writes.
//
// Instantiated for: OperationIr, DType, TensorIr, TensorData, DeviceSettings, QuantScheme,
// GraphBindings, SessionInit, SessionInfo, ScalarIr, StreamId, TensorId, Slice, Task,
// RemoteMessage, ClientFrame, TaskResponse, DataMessage.
#pragma once

#include <cstdint>
#include <vector>

#include "torchbridge/ir/msgpack_io.hpp"
#include "torchbridge/ir/protocol.hpp"
#include "torchbridge/result.hpp"

namespace tb::ir {

// Decodes exactly one value of type T from `bytes`; trailing bytes are an error. Views in the
// result (tensor bytes) share ownership of `bytes`.
template <class T>
Result<T> decode(const Bytes& bytes, DecodeLimits limits = {});

// Appends the encoding of `value`.
template <class T>
void encode(Writer& writer, const T& value);

template <class T>
std::vector<std::uint8_t> encode(const T& value) {
  Writer writer;
  encode(writer, value);
  return writer.take();
}

// The encoding of `value` as consecutive segments, payloads of at least `threshold` bytes left as
// views of their own storage (see Writer::segment_payloads_from).
template <class T>
std::vector<Bytes> encode_segments(const T& value, std::size_t threshold) {
  Writer writer;
  writer.segment_payloads_from(threshold);
  encode(writer, value);
  return writer.take_segments();
}

}  // namespace tb::ir
