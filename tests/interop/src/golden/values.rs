//! Values for the non-operation kinds: tensor data, device settings, client frames, server frames
//! and `/data` messages.
//!
//! Built with `cfg(burn_023)` (tests/interop-0.23), the `cfg(burn_023)` parts follow Burn
//! 0.23.0-pre.1: canonical quantized layouts only (its `TensorData` checks them on decode),
//! `Task::ReadTensors` and `Task::AllReduceLocal`, random-looking (bit 63) local transfer ids,
//! and `TaskResponseContent::ReadTensors`.

use super::mirror::*;
use super::ops::{G, schemes};
use burn_backend::{BoolStore, DType, ExecutionError, ProfileOptions, ProfileToken, Shape, Slice, TensorData};
use burn_backend::{DTypeUsage, DTypeUsageSet};
use burn_communication::Address;
use burn_ir::*;
use burn_std::id::StreamId;
use burn_std::{
    DeviceSettings, QuantConfig, QuantMode, QuantPropagation, QuantScheme, QuantStore, QuantValue, QuantizedBytes,
    ScaleDtype, bf16, f16, flex32,
};
use core::time::Duration;

fn shape0() -> Shape {
    Shape::from(Vec::<usize>::new())
}

/// Pack i8 quantized values into little-endian u32 words, `32 / bits` values per word, value `i`
/// of a word in bits `i*bits..(i+1)*bits` (the layout `unpack_q_to_i8s` in burn-std reads).
fn pack_sub_byte(values: &[i8], bits: usize) -> Vec<u8> {
    let per_word = 32 / bits;
    let mask = (1u32 << bits) - 1;
    let mut out = Vec::new();
    for chunk in values.chunks(per_word) {
        let mut word = 0u32;
        for (i, v) in chunk.iter().enumerate() {
            word |= ((*v as u8 as u32) & mask) << (i * bits);
        }
        out.extend_from_slice(&word.to_le_bytes());
    }
    out
}

/// Check a quantized `TensorData` decodes back to `values` through burn-std's own reader, and
/// that its length is what burn-std says the scheme takes.
/// The hand-packed `data` must be byte-for-byte what burn-std 0.23's own `TensorData::quantized`
/// writes for the same codes and scales (the canonical layout a 0.23 peer accepts).
#[cfg(burn_023)]
fn check_canonical(data: &TensorData, values: &[i8], scales: &[f32]) {
    let DType::QFloat(scheme) = data.dtype() else { panic!("not quantized") };
    let own = TensorData::quantized(values.to_vec(), data.shape().clone(), scheme, scales, None);
    assert_eq!(own.as_bytes(), data.as_bytes(), "hand-packed {scheme:?} differs from burn-std's layout");
}

fn check_quantized(data: &TensorData, values: &[i8]) {
    let DType::QFloat(scheme) = data.dtype() else { panic!("not quantized") };
    let q = QuantizedBytes { bytes: data.bytes().clone(), scheme, shape: data.shape().clone() };
    let (decoded, _scales) = q.into_vec_i8();
    assert_eq!(decoded, values, "quantized values do not read back for {scheme:?}");
    let expected = burn_std::quantized_data_len(&scheme, data.shape());
    // 0.23's TensorData only decodes the canonical length (`try_quantized_data_len`).
    #[cfg(burn_023)]
    assert_eq!(data.bytes().len(), expected, "quantized {scheme:?} {:?} is not canonical", data.shape().as_slice());
    if data.bytes().len() != expected {
        // Not fatal: TensorData::quantized pads the values to QPARAM_ALIGN before the scales,
        // which quantized_data_len does not count. Reported so the difference is visible.
        eprintln!(
            "note: quantized {:?} {:?}: {} bytes, quantized_data_len says {}",
            scheme,
            data.shape().as_slice(),
            data.bytes().len(),
            expected
        );
    }
}

pub fn tensor_data() -> Vec<(String, TensorData)> {
    let mut v: Vec<(String, TensorData)> = Vec::new();
    let mut push = |name: &str, d: TensorData| v.push((name.to_string(), d));

    push("F32/2x3", TensorData::new(vec![1.0f32, -2.5, 3.25, 0.0, -0.0, 1e-3], [2, 3]));
    push("F32/2x3x4", TensorData::new((0..24).map(|i| i as f32 * 0.5 - 3.0).collect::<Vec<_>>(), [2, 3, 4]));
    push("F32/rank0", TensorData::new(vec![42.0f32], shape0()));
    push("F32/empty-0x3", TensorData::new(Vec::<f32>::new(), [0, 3]));
    push("F32/specials", TensorData::new(vec![f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE, f32::MAX], [4]));
    push("F64/3", TensorData::new(vec![core::f64::consts::PI, -1e300, 5e-324], [3]));
    push("F16/2x2", TensorData::new(vec![f16::from_f32(1.0), f16::from_f32(-0.5), f16::MAX, f16::from_f32(0.1)], [2, 2]));
    push("BF16/4", TensorData::new(vec![bf16::from_f32(1.0), bf16::from_f32(-3.0e38), bf16::from_f32(0.1), bf16::ZERO], [4]));
    push("Flex32/1x3", TensorData::new(vec![flex32::from_f32(1.5), flex32::from_f32(-2.0), flex32::from_f32(1e-4)], [1, 3]));
    push("I64/2x2", TensorData::new(vec![i64::MIN, -1i64, 0, i64::MAX], [2, 2]));
    push("I32/3", TensorData::new(vec![-7i32, 0, 1 << 30], [3]));
    push("I32/rank0", TensorData::new(vec![-123456i32], shape0()));
    push("I16/2x1", TensorData::new(vec![i16::MIN, 300i16], [2, 1]));
    push("I8/5", TensorData::new(vec![-128i8, -1, 0, 1, 127], [5]));
    push("U64/2", TensorData::new(vec![u64::MAX, 1u64 << 40], [2]));
    push("U32/2x2", TensorData::new(vec![0u32, 1, 0xDEAD_BEEF, u32::MAX], [2, 2]));
    push("U16/3", TensorData::new(vec![0u16, 1000, u16::MAX], [3]));
    push("U8/2x3", TensorData::new(vec![0u8, 1, 2, 127, 128, 255], [2, 3]));
    push("U8/empty-2x0", TensorData::new(Vec::<u8>::new(), [2, 0]));
    push("Bool.Native/3", TensorData::new(vec![true, false, true], [3]));
    push("Bool.Native/rank0", TensorData::new(vec![false], shape0()));
    push("Bool.U8/2x2", TensorData::from_bytes_vec(vec![1, 0, 0, 1], [2, 2], DType::Bool(BoolStore::U8)));
    push(
        "Bool.U32/3",
        TensorData::from_bytes_vec([1u32, 0, 1].iter().flat_map(|x| x.to_le_bytes()).collect(), [3], DType::Bool(BoolStore::U32)),
    );

    // Quantized, through TensorData::quantized (i8 values, scales appended at the scale dtype).
    let q8s_tensor = QuantScheme::default()
        .with_value(QuantValue::Q8S)
        .with_store(QuantStore::Native)
        .per_tensor(ScaleDtype::F32);
    let vals: Vec<i8> = vec![-127, 0, 64, 127, -1, 5];
    let d = TensorData::quantized(vals.clone(), [2, 3], q8s_tensor, &[0.05], None);
    check_quantized(&d, &vals);
    push("QFloat/q8s-tensor", d);

    let q8s_packed = QuantScheme::default().with_value(QuantValue::Q8S).per_tensor(ScaleDtype::F32);
    let vals: Vec<i8> = vec![1, -2, 3, -4, 5, -6, 7, -8];
    let d = TensorData::quantized(vals.clone(), [2, 4], q8s_packed, &[0.25], None);
    check_quantized(&d, &vals);
    push("QFloat/q8s-tensor-packedu32", d);

    let q8s_default = QuantScheme::default().with_value(QuantValue::Q8S);
    let vals: Vec<i8> = vec![10, -20, 30, -40];
    let d = TensorData::quantized(vals.clone(), [4], q8s_default, &[0.5], None);
    check_quantized(&d, &vals);
    push("QFloat/q8s-no-level", d);

    let q8s_block32 = QuantScheme::default()
        .with_value(QuantValue::Q8S)
        .with_store(QuantStore::Native)
        .per_block([32], ScaleDtype::F32);
    let vals: Vec<i8> = (0..128).map(|i| ((i * 37) % 255 - 127) as i8).collect();
    let d = TensorData::quantized(vals.clone(), [2, 64], q8s_block32, &[0.01, 0.02, 0.04, 0.08], None);
    check_quantized(&d, &vals);
    push("QFloat/q8s-block32", d);

    let q8s_block32_f16 = QuantScheme::default()
        .with_value(QuantValue::Q8S)
        .with_store(QuantStore::Native)
        .per_block([32], ScaleDtype::F16);
    let vals: Vec<i8> = (0..64).map(|i| (i as i8) - 32).collect();
    let d = TensorData::quantized(vals.clone(), [64], q8s_block32_f16, &[0.125, 3.5], None);
    check_quantized(&d, &vals);
    push("QFloat/q8s-block32-f16", d);

    let q8s_block4x8_bf16 = QuantScheme::default()
        .with_value(QuantValue::Q8S)
        .with_store(QuantStore::Native)
        .per_block([4, 8], ScaleDtype::BF16);
    let vals: Vec<i8> = (0..128).map(|i| ((i * 7) % 200 - 100) as i8).collect();
    let d = TensorData::quantized(vals.clone(), [8, 16], q8s_block4x8_bf16, &[0.5, 1.0, 1.5, 2.0], None);
    check_quantized(&d, &vals);
    push("QFloat/q8s-block4x8-bf16", d);

    let q8s_block16_ue8m0 = QuantScheme::default()
        .with_value(QuantValue::Q8S)
        .with_store(QuantStore::Native)
        .per_block([16], ScaleDtype::UE8M0);
    let vals: Vec<i8> = (0..32).map(|i| 127 - (i as i8) * 8).collect();
    let d = TensorData::quantized(vals.clone(), [32], q8s_block16_ue8m0, &[0.25, 4.0], None);
    check_quantized(&d, &vals);
    push("QFloat/q8s-block16-ue8m0", d);

    let two_level = QuantScheme::default()
        .with_value(QuantValue::Q8S)
        .with_store(QuantStore::Native)
        .per_block([16], ScaleDtype::UE4M3)
        .per_tensor(ScaleDtype::F32);
    let vals: Vec<i8> = (0..32).map(|i| (i as i8) * 3 - 48).collect();
    let d = TensorData::quantized(vals.clone(), [2, 16], two_level, &[448.0, 0.5], Some(0.001));
    check_quantized(&d, &vals);
    push("QFloat/q8s-two-level-ue4m3", d);

    let e4m3 = QuantScheme::default()
        .with_value(QuantValue::E4M3)
        .with_store(QuantStore::Native)
        .per_block([32], ScaleDtype::UE8M0);
    // e4m3 bit patterns carried as i8 (Native e4m3 stores one byte per value).
    let vals: Vec<i8> = (0..32).map(|i| (i as u8).wrapping_mul(29) as i8).collect();
    let d = TensorData::quantized(vals.clone(), [32], e4m3, &[2.0], None);
    check_quantized(&d, &vals);
    push("QFloat/e4m3-block32-ue8m0", d);

    let q8s_lookup = QuantScheme::default()
        .with_value(QuantValue::Q8S)
        .with_store(QuantStore::Native)
        .with_mode(QuantMode::Lookup)
        .per_tensor(ScaleDtype::F32);
    let vals: Vec<i8> = vec![0, 1, 2, 3];
    let d = TensorData::quantized(vals.clone(), [2, 2], q8s_lookup, &[1.0], None);
    check_quantized(&d, &vals);
    push("QFloat/q8s-lookup", d);

    // Sub-byte values packed into u32 words (TensorData::quantized only writes unpacked i8s, so
    // these are laid out by hand as the packed stores are, then read back through burn-std).
    let q4s = QuantScheme::default()
        .with_value(QuantValue::Q4S)
        .with_store(QuantStore::PackedU32(0))
        .per_tensor(ScaleDtype::F32);
    let vals: Vec<i8> = vec![-7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 0];
    let mut bytes = pack_sub_byte(&vals, 4);
    bytes.extend_from_slice(&0.25f32.to_le_bytes());
    let d = TensorData::from_bytes_vec(bytes, [2, 8], DType::QFloat(q4s));
    check_quantized(&d, &vals);
    #[cfg(burn_023)]
    check_canonical(&d, &vals, &[0.25]);
    push("QFloat/q4s-packedu32-tensor", d);

    let q4s_block = QuantScheme::default()
        .with_value(QuantValue::Q4S)
        .with_store(QuantStore::PackedU32(0))
        .per_block([8], ScaleDtype::F16);
    let vals: Vec<i8> = (0..16).map(|i| (i % 15) as i8 - 7).collect();
    let mut bytes = pack_sub_byte(&vals, 4);
    for s in [0.5f32, 2.0] {
        bytes.extend_from_slice(&f16::from_f32(s).to_le_bytes());
    }
    let d = TensorData::from_bytes_vec(bytes, [16], DType::QFloat(q4s_block));
    check_quantized(&d, &vals);
    #[cfg(burn_023)]
    check_canonical(&d, &vals, &[0.5, 2.0]);
    push("QFloat/q4s-packedu32-block8-f16", d);

    let q2s = QuantScheme::default()
        .with_value(QuantValue::Q2S)
        .with_store(QuantStore::PackedU32(0))
        .per_tensor(ScaleDtype::F32);
    let vals: Vec<i8> = (0..32).map(|i| (i % 3) as i8 - 1).collect();
    let mut bytes = pack_sub_byte(&vals, 2);
    bytes.extend_from_slice(&0.75f32.to_le_bytes());
    let d = TensorData::from_bytes_vec(bytes, [2, 16], DType::QFloat(q2s));
    check_quantized(&d, &vals);
    #[cfg(burn_023)]
    check_canonical(&d, &vals, &[0.75]);
    push("QFloat/q2s-packedu32-tensor", d);

    v
}

pub fn dtypes() -> Vec<(String, DType)> {
    let mut v: Vec<(String, DType)> = [
        DType::F64,
        DType::F32,
        DType::Flex32,
        DType::F16,
        DType::BF16,
        DType::I64,
        DType::I32,
        DType::I16,
        DType::I8,
        DType::U64,
        DType::U32,
        DType::U16,
        DType::U8,
    ]
    .into_iter()
    .map(|d| (format!("{d:?}"), d))
    .collect();
    for s in [BoolStore::Native, BoolStore::U8, BoolStore::U32] {
        v.push((format!("Bool.{s:?}"), DType::Bool(s)));
    }
    for (label, scheme) in schemes() {
        v.push((format!("QFloat/{label}"), DType::QFloat(scheme)));
    }
    v
}

pub fn flex_settings() -> DeviceSettings {
    DeviceSettings::new(
        DType::F32,
        DType::I32,
        DType::Bool(BoolStore::Native),
        QuantConfig::new(QuantScheme::default().with_store(QuantStore::Native), Default::default()),
    )
}

pub fn settings() -> Vec<(String, DeviceSettings)> {
    let sch = schemes();
    let find = |label: &str| sch.iter().find(|(l, _)| *l == label).unwrap().1;
    vec![
        ("flex-defaults".into(), flex_settings()),
        (
            "cubecl-defaults".into(),
            DeviceSettings::new(DType::F32, DType::I32, DType::Bool(BoolStore::U8), Default::default()),
        ),
        (
            "f16-i64-u32/propagate-q4f-block32".into(),
            DeviceSettings::new(
                DType::F16,
                DType::I64,
                DType::Bool(BoolStore::U32),
                QuantConfig::new(find("q4f-block32-f16"), QuantPropagation::Propagate),
            ),
        ),
        (
            "bf16-i16-native/e2m1-two-level".into(),
            DeviceSettings::new(
                DType::BF16,
                DType::I16,
                DType::Bool(BoolStore::Native),
                QuantConfig::new(find("e2m1-two-level-ue4m3"), QuantPropagation::Inhibit),
            ),
        ),
        (
            "f64-u64-u8/lookup".into(),
            DeviceSettings::new(
                DType::F64,
                DType::U64,
                DType::Bool(BoolStore::U8),
                QuantConfig::new(find("q4s-lookup-tensor-f16"), QuantPropagation::Propagate),
            ),
        ),
        (
            "flex32-i8-native".into(),
            DeviceSettings::new(DType::Flex32, DType::I8, DType::Bool(BoolStore::Native), Default::default()),
        ),
        (
            "f32-u32-u32/block4x8".into(),
            DeviceSettings::new(
                DType::F32,
                DType::U32,
                DType::Bool(BoolStore::U32),
                QuantConfig::new(find("e4m3-block4x8-ue8m0"), QuantPropagation::Inhibit),
            ),
        ),
        (
            "f16-u16-u8".into(),
            DeviceSettings::new(DType::F16, DType::U16, DType::Bool(BoolStore::U8), Default::default()),
        ),
        (
            "bf16-u8-native/q2s-block16".into(),
            DeviceSettings::new(
                DType::BF16,
                DType::U8,
                DType::Bool(BoolStore::Native),
                QuantConfig::new(find("q2s-block1x16-bf16"), QuantPropagation::Propagate),
            ),
        ),
    ]
}

fn sid(value: u64) -> StreamId {
    StreamId { value }
}

fn rt(id: u64, dims: &[usize], status: TensorStatus, dtype: DType) -> TensorIr {
    TensorIr { id: TensorId::new(id), shape: Shape::from(dims.to_vec()), status, dtype }
}

pub fn capability() -> TransferCapability {
    let mut c = [0u8; 32];
    for (i, b) in c.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(37).wrapping_add(0xA5);
    }
    TransferCapability(c)
}

/// Concrete ids bound by the graph frames (`Task.RegisterAndExecuteGraph`, `Task.ExecuteGraph`).
pub const GRAPH_X1: u64 = 0x1_0000_0040;
pub const GRAPH_X2: u64 = 0x1_0000_0099;
pub const GRAPH_Y: u64 = 0x8000_0000_0000_0123;
pub const GRAPH_OUT1: u64 = 77;
pub const GRAPH_OUT2: u64 = 0xFFFF_FFFF_0000_0001;

/// Slice ranges of the first graph run: rows `0..2`, columns reversed (`[0, None, -1]`).
pub fn graph_ranges_1() -> Vec<Slice> {
    vec![Slice { start: 0, end: Some(2), step: 1 }, Slice { start: 0, end: None, step: -1 }]
}

/// Slice ranges of the replay: rows `2..4`, columns `-8..` (all eight).
pub fn graph_ranges_2() -> Vec<Slice> {
    vec![Slice { start: 2, end: Some(4), step: 1 }, Slice { start: -8, end: None, step: 1 }]
}

pub fn graph_scalars_1() -> Vec<ScalarIr> {
    vec![ScalarIr::Float(0.5), ScalarIr::Float(-3.25)]
}

pub fn graph_scalars_2() -> Vec<ScalarIr> {
    vec![ScalarIr::Float(2.0), ScalarIr::Float(0.0)]
}

/// Ids used by `Batch/3ops-read`: `sum(relu(a * b))`, read back with request id 12.
pub const BATCH_A: u64 = 0x1_0000_0A01;
pub const BATCH_B: u64 = 0x8000_0000_0000_0A02;
pub const BATCH_OUT: u64 = 0xA05;

/// A relative graph as burn-fusion's relativization produces it (relative tensor ids in first-use
/// order, shapes holding relative dim ids with id 0 = the dim value 1, scalars replaced by
/// `ScalarIr::UInt(placeholder)`, slice ranges replaced by `Slice { start: placeholder, end: None,
/// step: 1 }`). Concretely: `y + reshape(exp(x * a)[ranges] + b, [4, 4])` with x `[4, 8]`,
/// y `[1, 4]` and the slice `[2, 8]`.
pub fn relative_graph() -> Vec<OperationIr> {
    use TensorStatus::*;
    let f = DType::F32;
    vec![
        OperationIr::NumericFloat(
            f,
            NumericOperationIr::MulScalar(ScalarOpIr { lhs: rt(0, &[1, 2], ReadOnly, f), rhs: ScalarIr::UInt(0), out: rt(1, &[1, 2], NotInit, f) }),
        ),
        OperationIr::Float(f, FloatOperationIr::Exp(UnaryOpIr { input: rt(1, &[1, 2], ReadWrite, f), out: rt(2, &[1, 2], NotInit, f) })),
        OperationIr::BaseFloat(BaseOperationIr::Slice(SliceOpIr {
            tensor: rt(2, &[1, 2], ReadWrite, f),
            ranges: vec![Slice { start: 0, end: None, step: 1 }, Slice { start: 1, end: None, step: 1 }],
            out: rt(3, &[3, 2], NotInit, f),
        })),
        OperationIr::NumericFloat(
            f,
            NumericOperationIr::AddScalar(ScalarOpIr { lhs: rt(3, &[3, 2], ReadWrite, f), rhs: ScalarIr::UInt(1), out: rt(4, &[3, 2], NotInit, f) }),
        ),
        OperationIr::BaseFloat(BaseOperationIr::Reshape(ShapeOpIr { input: rt(4, &[3, 2], ReadWrite, f), out: rt(5, &[1, 1], NotInit, f) })),
        OperationIr::NumericFloat(
            f,
            NumericOperationIr::Add(BinaryOpIr { lhs: rt(5, &[1, 1], ReadWrite, f), rhs: rt(6, &[0, 1], ReadOnly, f), out: rt(7, &[1, 1], NotInit, f) }),
        ),
    ]
}

fn msg(task: Task) -> RemoteMessage {
    RemoteMessage::Task(task)
}

pub fn frames() -> Vec<(String, Vec<RemoteMessage>)> {
    let mut g = G::new();
    let mut v: Vec<(String, Vec<RemoteMessage>)> = Vec::new();
    let session = SessionId { id: 0x0123_4567_89AB_CDEF };
    let big_stream = sid(0x8000_0000_0000_0001);
    let cap = capability();

    v.push((
        "Init".into(),
        vec![RemoteMessage::Init(SessionInit { version: PROTOCOL_VERSION, session_id: session, device_index: 0, authorization: vec![] })],
    ));
    v.push((
        "Init/device3-auth".into(),
        vec![RemoteMessage::Init(SessionInit {
            version: PROTOCOL_VERSION,
            session_id: SessionId { id: 7 },
            device_index: 3,
            authorization: b"bearer s3cr3t\x00\xff".to_vec(),
        })],
    ));
    v.push(("Close".into(), vec![RemoteMessage::Close(session)]));

    v.push(("Task.Seed".into(), vec![msg(Task::Seed(0xDEAD_BEEF_CAFE_BABE))]));
    v.push(("Task.Seed/zero".into(), vec![msg(Task::Seed(0))]));

    let op = OperationIr::NumericFloat(
        DType::F32,
        NumericOperationIr::Add(BinaryOpIr {
            lhs: g.inp(&[2, 3], DType::F32),
            rhs: g.inp(&[2, 3], DType::F32),
            out: g.out(&[2, 3], DType::F32),
        }),
    );
    v.push(("Task.RegisterOperation".into(), vec![msg(Task::RegisterOperation(sid(1), op))]));
    #[cfg(not(burn_023))]
    let op = OperationIr::Distributed(DistributedOperationIr::SyncCollective);
    // 0.23 has no `Distributed` category: one of its new leaves instead.
    #[cfg(burn_023)]
    let op = OperationIr::Float(
        DType::F16,
        FloatOperationIr::FmodScalar(ScalarOpIr { lhs: g.inp(&[3], DType::F16), rhs: ScalarIr::Float(1.5), out: g.out(&[3], DType::F16) }),
    );
    v.push(("Task.RegisterOperation/big-stream".into(), vec![msg(Task::RegisterOperation(big_stream, op))]));

    let bindings = GraphBindings {
        tensors: vec![
            (TensorId::new(0), TensorId::new(GRAPH_X1)),
            (TensorId::new(6), TensorId::new(GRAPH_Y)),
            (TensorId::new(7), TensorId::new(GRAPH_OUT1)),
        ],
        shapes: vec![1, 4, 8, 2],
        scalars: graph_scalars_1(),
        ranges: graph_ranges_1(),
    };
    v.push((
        "Task.RegisterAndExecuteGraph".into(),
        vec![msg(Task::RegisterAndExecuteGraph { stream_id: sid(2), graph_id: GraphId(1), relative_graph: relative_graph(), bindings })],
    ));
    let bindings = GraphBindings {
        tensors: vec![
            (TensorId::new(0), TensorId::new(GRAPH_X2)),
            (TensorId::new(6), TensorId::new(GRAPH_Y)),
            (TensorId::new(7), TensorId::new(GRAPH_OUT2)),
        ],
        shapes: vec![1, 4, 8, 2],
        scalars: graph_scalars_2(),
        ranges: graph_ranges_2(),
    };
    v.push(("Task.ExecuteGraph".into(), vec![msg(Task::ExecuteGraph { stream_id: sid(2), graph_id: GraphId(1), bindings })]));
    let bindings = GraphBindings { tensors: vec![], shapes: vec![1], scalars: vec![], ranges: vec![] };
    v.push((
        "Task.ExecuteGraph/empty-bindings".into(),
        vec![msg(Task::ExecuteGraph { stream_id: big_stream, graph_id: GraphId(u64::MAX), bindings })],
    ));

    v.push((
        "Task.RegisterTensor".into(),
        vec![msg(Task::RegisterTensor(sid(1), TensorId::new(0x1_0000_0003), TensorData::new(vec![1.0f32, 2.0, -3.5, 4.25, 0.0, 6.0], [2, 3])))],
    ));
    v.push((
        "Task.RegisterTensor/bool-u8".into(),
        vec![msg(Task::RegisterTensor(sid(0), TensorId::new(4), TensorData::from_bytes_vec(vec![1, 0, 1], [3], DType::Bool(BoolStore::U8))))],
    ));
    v.push((
        "Task.RegisterTensor/i64-rank0".into(),
        vec![msg(Task::RegisterTensor(big_stream, TensorId::new(u64::MAX - 1), TensorData::new(vec![-9i64], shape0())))],
    ));
    v.push((
        "Task.RegisterAlias".into(),
        vec![msg(Task::RegisterAlias { stream_id: sid(1), new_id: TensorId::new(0x8000_0000_0000_0009), src_id: TensorId::new(0x1_0000_0003) })],
    ));
    v.push((
        "Task.RegisterTensorRemote".into(),
        vec![msg(Task::RegisterTensorRemote(
            sid(1),
            TensorRemote { capability: cap, peer: PeerAddr::WebSocket(Address::from("ws://10.1.2.3:3010")) },
            TensorId::new(0x2_0000_0001),
        ))],
    ));
    v.push((
        "Task.ExposeTensorRemote".into(),
        vec![msg(Task::ExposeTensorRemote {
            stream_id: sid(1),
            tensor: rt(0x2_0000_0000, &[4, 4], TensorStatus::ReadOnly, DType::F32),
            count: 2,
            capability: cap,
            target: PeerId::WebSocket(Address::from("wss://node-b.example")),
        })],
    ));
    #[cfg(not(burn_023))]
    let local_transfer = LocalTransferId(0x1_0000_0005);
    // Random in 0.23 (`LocalTransferId::random`): a full 64-bit value.
    #[cfg(burn_023)]
    let local_transfer = LocalTransferId(0xC3A5_9E37_79B9_7F4A);
    v.push((
        "Task.ExposeTensorLocal".into(),
        vec![msg(Task::ExposeTensorLocal {
            stream_id: sid(5),
            tensor: rt(11, &[3, 0, 2], TensorStatus::ReadWrite, DType::BF16),
            transfer_id: local_transfer,
        })],
    ));
    v.push((
        "Task.RegisterTensorLocal".into(),
        vec![msg(Task::RegisterTensorLocal { stream_id: sid(6), transfer_id: local_transfer, new_id: TensorId::new(12) })],
    ));
    #[cfg(not(burn_023))]
    v.push((
        "Task.ReadTensor".into(),
        vec![msg(Task::ReadTensor(5, sid(1), rt(3, &[2, 3], TensorStatus::ReadOnly, DType::F32)))],
    ));
    #[cfg(not(burn_023))]
    v.push((
        "Task.ReadTensor/readwrite-qfloat".into(),
        vec![msg(Task::ReadTensor(u64::MAX, big_stream, rt(1 << 63, &[2, 8, 64], TensorStatus::ReadWrite, DType::QFloat(schemes()[2].1))))],
    ));
    #[cfg(burn_023)]
    frames_023(&mut v, session, big_stream);
    v.push(("Task.SyncBackend".into(), vec![msg(Task::SyncBackend(6, sid(1)))]));
    v.push(("Task.SyncBackend/big-stream".into(), vec![msg(Task::SyncBackend(0, big_stream))]));
    v.push(("Task.DTypeUsage".into(), vec![msg(Task::DTypeUsage(0, DType::F32))]));
    v.push(("Task.DTypeUsage/bool-u32".into(), vec![msg(Task::DTypeUsage(2, DType::Bool(BoolStore::U32)))]));
    v.push(("Task.DTypeUsage/qfloat".into(), vec![msg(Task::DTypeUsage(3, DType::QFloat(schemes()[6].1)))]));
    v.push(("Task.ProfileStart".into(), vec![msg(Task::ProfileStart(8, sid(1)))]));
    let token = ProfileToken { id: 0x1_0000_0001, opened_on: 7 };
    v.push(("Task.ProfileEnd".into(), vec![msg(Task::ProfileEnd(9, sid(1), token, ProfileOptions::default()))]));
    v.push((
        "Task.ProfileEnd/flush".into(),
        vec![msg(Task::ProfileEnd(10, big_stream, ProfileToken { id: 3, opened_on: 0 }, ProfileOptions::default().flush()))],
    ));
    v.push(("Task.ProfileAbandon".into(), vec![msg(Task::ProfileAbandon(sid(1), token))]));

    // Multi-message batches.
    let f = DType::F32;
    let a = rt(BATCH_A, &[4], TensorStatus::ReadOnly, f);
    let b = rt(BATCH_B, &[4], TensorStatus::ReadWrite, f);
    let c = rt(0xA03, &[4], TensorStatus::NotInit, f);
    let mut c_rw = c.clone();
    c_rw.status = TensorStatus::ReadWrite;
    let e = rt(0x1_0000_0A04, &[4], TensorStatus::NotInit, f);
    let mut e_rw = e.clone();
    e_rw.status = TensorStatus::ReadWrite;
    let o = rt(BATCH_OUT, &[1], TensorStatus::NotInit, f);
    let mut o_ro = o.clone();
    o_ro.status = TensorStatus::ReadOnly;
    #[cfg(not(burn_023))]
    let read = msg(Task::ReadTensor(12, sid(1), o_ro));
    #[cfg(burn_023)]
    let read = msg(Task::ReadTensors(12, sid(1), vec![o_ro]));
    v.push((
        "Batch/3ops-read".into(),
        vec![
            msg(Task::RegisterOperation(sid(1), OperationIr::NumericFloat(f, NumericOperationIr::Mul(BinaryOpIr { lhs: a, rhs: b, out: c })))),
            msg(Task::RegisterOperation(
                sid(1),
                OperationIr::Activation(ActivationOperationIr::Relu(UnaryOpIr { input: c_rw, out: e })),
            )),
            msg(Task::RegisterOperation(sid(1), OperationIr::NumericFloat(f, NumericOperationIr::Sum(ReduceOpIr { input: e_rw, out: o })))),
            read,
        ],
    ));
    let t = TensorId::new(0x1_0000_0100);
    let init_out = TensorIr { id: t, shape: Shape::from(vec![2usize]), status: TensorStatus::NotInit, dtype: DType::I32 };
    let mut dropped = init_out.clone();
    dropped.status = TensorStatus::ReadWrite;
    v.push((
        "Batch/register-init-drop-sync".into(),
        vec![
            msg(Task::RegisterTensor(sid(1), t, TensorData::new(vec![3i32, -4], [2]))),
            msg(Task::RegisterOperation(sid(1), OperationIr::Init(InitOperationIr { out: init_out }))),
            msg(Task::RegisterOperation(sid(1), OperationIr::Drop(dropped))),
            msg(Task::SyncBackend(13, sid(1))),
        ],
    ));
    v.push((
        "Batch/multi-stream-close".into(),
        vec![
            msg(Task::Seed(1234)),
            msg(Task::RegisterOperation(sid(1), OperationIr::Drop(rt(40, &[], TensorStatus::ReadWrite, DType::F16)))),
            msg(Task::RegisterOperation(big_stream, OperationIr::Drop(rt(41, &[8, 8], TensorStatus::ReadWrite, DType::U8)))),
            msg(Task::ProfileAbandon(sid(2), ProfileToken { id: 1, opened_on: 2 })),
            RemoteMessage::Close(session),
        ],
    ));
    v.push(("Batch/empty".into(), vec![]));
    v
}

fn resp(content: TaskResponseContent, id: u64) -> TaskResponse {
    TaskResponse { content, id }
}

pub fn responses() -> Vec<(String, TaskResponse)> {
    use TaskResponseContent as C;
    let mut v: Vec<(String, TaskResponse)> = Vec::new();
    v.push((
        "Init".into(),
        resp(C::Init(SessionInfo { version: PROTOCOL_VERSION, settings: flex_settings(), device_count: 1, peer_id: None }), 0),
    ));
    v.push((
        "Init/peer-4-devices".into(),
        resp(
            C::Init(SessionInfo {
                version: PROTOCOL_VERSION,
                settings: settings()[2].1,
                device_count: 4,
                peer_id: Some(PeerId::WebSocket(Address::from("ws://127.0.0.1:3000"))),
            }),
            0,
        ),
    ));
    v.push(("InitRefused/Unauthorized".into(), resp(C::InitRefused(SessionRefusal::Unauthorized), 0)));
    v.push(("InitRefused/NoSuchDevice".into(), resp(C::InitRefused(SessionRefusal::NoSuchDevice { device_count: 2 }), 0)));
    v.push((
        "InitRefused/IncompatibleProtocol".into(),
        resp(C::InitRefused(SessionRefusal::IncompatibleProtocol { server_version: PROTOCOL_VERSION }), 0),
    ));
    #[cfg(not(burn_023))]
    v.push(("ReadTensor/Ok".into(), resp(C::ReadTensor(Ok(TensorData::new(vec![1.0f32, 2.0], [2]))), 7)));
    #[cfg(not(burn_023))]
    v.push((
        "ReadTensor/Ok-bool-2x2".into(),
        resp(C::ReadTensor(Ok(TensorData::new(vec![true, false, false, true], [2, 2]))), 0x1_0000_0000),
    ));
    #[cfg(not(burn_023))]
    v.push((
        "ReadTensor/Ok-empty-i64".into(),
        resp(C::ReadTensor(Ok(TensorData::new(Vec::<i64>::new(), [0]))), u64::MAX),
    ));
    #[cfg(not(burn_023))]
    v.push((
        "ReadTensor/Err-WithContext".into(),
        resp(C::ReadTensor(Err(ExecutionError::with_context("tensor 3 was never registered"))), 8),
    ));
    #[cfg(not(burn_023))]
    v.push((
        "ReadTensor/Err-Generic".into(),
        resp(C::ReadTensor(Err(ExecutionError::generic("CUDA error: out of memory (ünïcödé)"))), 9),
    ));
    #[cfg(not(burn_023))]
    v.push((
        "ReadTensor/Err-DevicePoisoned".into(),
        resp(C::ReadTensor(Err(ExecutionError::device_poisoned("illegal memory access"))), 10),
    ));
    #[cfg(burn_023)]
    responses_023(&mut v);
    v.push(("SyncBackend/Ok".into(), resp(C::SyncBackend(Ok(())), 11)));
    v.push(("SyncBackend/Err".into(), resp(C::SyncBackend(Err(ExecutionError::with_context(""))), 12)));
    let usages: [(&str, DTypeUsageSet); 5] = [
        ("empty", DTypeUsageSet::empty()),
        ("Storage", DTypeUsage::Storage.into()),
        ("Storage+Arithmetic", DTypeUsage::general()),
        ("Accelerated", DTypeUsage::Accelerated.into()),
        ("all", DTypeUsageSet::all()),
    ];
    for (i, (label, set)) in usages.into_iter().enumerate() {
        v.push((format!("DTypeUsage/{label}"), resp(C::DTypeUsage(set), 20 + i as u64)));
    }
    v.push(("ProfileStart/Ok-None".into(), resp(C::ProfileStart(Ok(None)), 30)));
    v.push((
        "ProfileStart/Ok-Some".into(),
        resp(C::ProfileStart(Ok(Some(ProfileToken { id: 0x8000_0000_0000_0002, opened_on: 3 }))), 31),
    ));
    v.push(("ProfileStart/Err".into(), resp(C::ProfileStart(Err(ExecutionError::generic("profiling unsupported"))), 32)));
    v.push(("ProfileEnd/Ok-None".into(), resp(C::ProfileEnd(Ok(None)), 33)));
    v.push(("ProfileEnd/Ok-Some".into(), resp(C::ProfileEnd(Ok(Some(Duration::new(3, 141_592_653)))), 34)));
    v.push((
        "ProfileEnd/Ok-Some-large".into(),
        resp(C::ProfileEnd(Ok(Some(Duration::new(u64::MAX, 999_999_999)))), 35),
    ));
    v.push(("ProfileEnd/Err".into(), resp(C::ProfileEnd(Err(ExecutionError::device_poisoned("device lost"))), 36)));
    v
}

pub fn data_messages() -> Vec<(String, ExternalCommMessage)> {
    use burn_communication::external_comm::TensorTransferId;
    let cap = capability();
    vec![
        ("TensorRequest".into(), ExternalCommMessage::TensorRequest(TensorTransferId::from(cap.websocket_id()))),
        ("TensorRequest/small".into(), ExternalCommMessage::TensorRequest(TensorTransferId::from(3))),
        ("Tensor".into(), ExternalCommMessage::Tensor(TensorData::new(vec![0.5f32, -1.0, 2.0, 8.0], [2, 2]))),
        (
            "Tensor/bool-u32".into(),
            ExternalCommMessage::Tensor(TensorData::from_bytes_vec(
                [0u32, 1].iter().flat_map(|x| x.to_le_bytes()).collect(),
                [2],
                DType::Bool(BoolStore::U32),
            )),
        ),
        ("Tensor/empty-f16".into(), ExternalCommMessage::Tensor(TensorData::new(Vec::<f16>::new(), [3, 0]))),
    ]
}

/// The 0.23 tasks: `ReadTensors` with 0, 1 and several tensors, and `AllReduceLocal`.
#[cfg(burn_023)]
fn frames_023(v: &mut Vec<(String, Vec<RemoteMessage>)>, session: SessionId, big_stream: StreamId) {
    use burn_backend::distributed::ReduceOperation;
    v.push((
        "Task.ReadTensors".into(),
        vec![msg(Task::ReadTensors(5, sid(1), vec![rt(3, &[2, 3], TensorStatus::ReadOnly, DType::F32)]))],
    ));
    v.push(("Task.ReadTensors/empty".into(), vec![msg(Task::ReadTensors(0, sid(1), vec![]))]));
    v.push((
        "Task.ReadTensors/several-mixed".into(),
        vec![msg(Task::ReadTensors(
            u64::MAX,
            big_stream,
            vec![
                rt(1 << 63, &[2, 8, 64], TensorStatus::ReadWrite, DType::QFloat(schemes()[2].1)),
                rt(0x1_0000_0003, &[], TensorStatus::ReadOnly, DType::I64),
                rt(7, &[3, 0], TensorStatus::ReadOnly, DType::Bool(BoolStore::U8)),
                rt(u64::MAX - 4, &[4, 4], TensorStatus::ReadWrite, DType::BF16),
            ],
        ))],
    ));
    v.push((
        "Task.AllReduceLocal".into(),
        vec![msg(Task::AllReduceLocal {
            stream_id: sid(3),
            part: LocalAllReducePart {
                tensor: rt(0x1_0000_0021, &[4, 4], TensorStatus::ReadWrite, DType::F32),
                out: TensorId::new(0x1_0000_0022),
                collective: LocalCollectiveId(0x9E37_79B9_7F4A_7C15),
                member: 0,
                sessions: vec![session, SessionId { id: 0xFEDC_BA98_7654_3210 }],
                op: ReduceOperation::Sum,
            },
        })],
    ));
    v.push((
        "Task.AllReduceLocal/mean-member2-of-3".into(),
        vec![msg(Task::AllReduceLocal {
            stream_id: big_stream,
            part: LocalAllReducePart {
                tensor: rt(1 << 63 | 0x31, &[1024], TensorStatus::ReadOnly, DType::BF16),
                out: TensorId::new(u64::MAX - 0x32),
                collective: LocalCollectiveId(0x5DEE_CE66_D1CE_4E5B),
                member: 2,
                sessions: vec![SessionId { id: 1 }, SessionId { id: 0x8000_0000_0000_0002 }, session],
                op: ReduceOperation::Mean,
            },
        })],
    ));
}

/// The 0.23 read answers: `ReadTensors` with 0, 1 and several tensors, and every error.
#[cfg(burn_023)]
fn responses_023(v: &mut Vec<(String, TaskResponse)>) {
    use TaskResponseContent as C;
    v.push(("ReadTensors/Ok".into(), resp(C::ReadTensors(Ok(vec![TensorData::new(vec![1.0f32, 2.0], [2])])), 7)));
    v.push(("ReadTensors/Ok-empty".into(), resp(C::ReadTensors(Ok(vec![])), 0)));
    let sch = schemes();
    let q8 = sch.iter().find(|(l, _)| *l == "q8s-tensor-f32").unwrap().1;
    let quantized = TensorData::quantized(vec![-127i8, 0, 64, 127], [2, 2], q8, &[0.05], None);
    check_quantized(&quantized, &[-127, 0, 64, 127]);
    v.push((
        "ReadTensors/Ok-several".into(),
        resp(
            C::ReadTensors(Ok(vec![
                TensorData::new(vec![true, false, false, true], [2, 2]),
                TensorData::new(Vec::<i64>::new(), [0]),
                TensorData::new(vec![f16::from_f32(0.5), f16::from_f32(-2.0), f16::MAX], [3, 1]),
                quantized,
            ])),
            0x1_0000_0000,
        ),
    ));
    v.push(("ReadTensors/Ok-bool-2x2".into(), resp(C::ReadTensors(Ok(vec![TensorData::new(vec![true, false, false, true], [2, 2])])), u64::MAX)));
    v.push((
        "ReadTensors/Err-WithContext".into(),
        resp(C::ReadTensors(Err(ExecutionError::with_context("tensor 3 was never registered"))), 8),
    ));
    v.push((
        "ReadTensors/Err-Generic".into(),
        resp(C::ReadTensors(Err(ExecutionError::generic("CUDA error: out of memory (ünïcödé)"))), 9),
    ));
    v.push((
        "ReadTensors/Err-DevicePoisoned".into(),
        resp(C::ReadTensors(Err(ExecutionError::device_poisoned("illegal memory access"))), 10),
    ));
}
