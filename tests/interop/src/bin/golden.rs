//! Golden test vectors for the Burn remote protocol.
//!
//! Builds real Burn 0.22.1 values (and mirrors of burn-remote's `pub(crate)` wire types), serializes
//! each exactly as Burn's remote client/server do (`rmp_serde::to_vec`, default config) and writes
//! them as `KIND<TAB>NAME<TAB>HEX` lines to `tests/ir/golden/vectors.tsv` (or the path in argv[1]).
//!
//! Every vector is decoded back into its type and re-encoded; the bytes must match. Coverage of
//! the operation tree, `DType`, `Task`, `TaskResponseContent`, ... is checked against the variant
//! lists of the crates' own serde derives.
//!
//! tests/interop-0.23 builds this same file against Burn 0.23.0-pre.1 (`cfg(burn_023)`, its bin
//! `golden_023`), writing `tests/ir/golden/vectors-0.23.0-pre.1.tsv` (scripts/regen-golden-0.23).

#[path = "../golden/introspect.rs"]
mod introspect;
#[path = "../golden/mirror.rs"]
mod mirror;
#[path = "../golden/ops.rs"]
mod ops;
#[path = "../golden/values.rs"]
mod values;

use burn_backend::{BoolStore, DType, ExecutionError};
use burn_ir::*;
use introspect::variants_of;
use mirror::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;

struct Vectors {
    lines: Vec<(String, String, String)>,
    seen: HashSet<(String, String)>,
    counts: BTreeMap<String, usize>,
}

impl Vectors {
    fn new() -> Self {
        Self { lines: Vec::new(), seen: HashSet::new(), counts: BTreeMap::new() }
    }

    /// Serialize `value`, check it round-trips byte-for-byte through its own type, and record it.
    fn add<T: Serialize + DeserializeOwned>(&mut self, kind: &str, name: &str, value: &T) -> Vec<u8> {
        let bytes = rmp_serde::to_vec(value).unwrap_or_else(|e| panic!("{kind} {name}: serialize: {e}"));
        let back: T = rmp_serde::from_slice(&bytes).unwrap_or_else(|e| panic!("{kind} {name}: deserialize: {e}"));
        let again = rmp_serde::to_vec(&back).unwrap();
        assert_eq!(bytes, again, "{kind} {name}: re-encoding differs");
        assert!(
            !name.is_empty() && !name.contains(['\t', '\n', ' ']),
            "{kind}: bad name {name:?}"
        );
        assert!(self.seen.insert((kind.to_string(), name.to_string())), "duplicate {kind} {name}");
        *self.counts.entry(kind.to_string()).or_default() += 1;
        self.lines.push((kind.to_string(), name.to_string(), hex::encode(&bytes)));
        bytes
    }
}

/// `Category.Variant` of an operation, read off its serde representation (so a label can never
/// disagree with the value).
fn op_name(op: &OperationIr) -> String {
    let v = serde_json::to_value(op).unwrap();
    let obj = v.as_object().expect("OperationIr is externally tagged");
    let (cat, inner) = obj.iter().next().unwrap();
    let inner = match inner {
        // NumericFloat / NumericInt / Float carry (DType, op).
        serde_json::Value::Array(a) if matches!(cat.as_str(), "NumericFloat" | "NumericInt" | "Float") => &a[1],
        other => other,
    };
    match cat.as_str() {
        "Init" | "Custom" | "Drop" => cat.clone(),
        _ => match inner {
            serde_json::Value::String(unit) => format!("{cat}.{unit}"),
            serde_json::Value::Object(o) => format!("{cat}.{}", o.keys().next().unwrap()),
            other => panic!("unexpected shape for {cat}: {other}"),
        },
    }
}

/// All leaves of the operation tree according to the serde derives of burn-ir.
fn expected_leaves() -> BTreeSet<String> {
    let mut leaves = BTreeSet::new();
    for cat in variants_of::<OperationIr>() {
        let inner: Option<&'static [&'static str]> = match *cat {
            "BaseFloat" | "BaseInt" | "BaseBool" => Some(variants_of::<BaseOperationIr>()),
            "NumericFloat" | "NumericInt" => Some(variants_of::<NumericOperationIr>()),
            "Bool" => Some(variants_of::<BoolOperationIr>()),
            "Int" => Some(variants_of::<IntOperationIr>()),
            "Float" => Some(variants_of::<FloatOperationIr>()),
            "Module" => Some(variants_of::<ModuleOperationIr>()),
            #[cfg(not(burn_023))]
            "Distributed" => Some(variants_of::<DistributedOperationIr>()),
            "Activation" => Some(variants_of::<ActivationOperationIr>()),
            "Init" | "Custom" | "Drop" => None,
            other => panic!("OperationIr has a category this generator does not know: {other}"),
        };
        match inner {
            Some(variants) => leaves.extend(variants.iter().map(|v| format!("{cat}.{v}"))),
            None => {
                leaves.insert(cat.to_string());
            }
        }
    }
    leaves
}

fn base(name: &str) -> &str {
    name.split('/').next().unwrap()
}

fn check_covers(what: &str, expected: impl IntoIterator<Item = String>, names: &[String]) {
    let have: BTreeSet<&str> = names.iter().map(|n| base(n)).collect();
    let missing: Vec<String> = expected.into_iter().filter(|e| !have.contains(e.as_str())).collect();
    assert!(missing.is_empty(), "{what}: no vector for {missing:?}");
}

fn repo_root() -> PathBuf {
    // tests/interop -> repo root
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn main() {
    #[cfg(not(burn_023))]
    let out_path = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("tests/ir/golden/vectors.tsv"));
    #[cfg(burn_023)]
    let out_path = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("tests/ir/golden/vectors-0.23.0-pre.1.tsv"));

    let mut vec = Vectors::new();

    // ---- op ------------------------------------------------------------------------------
    let mut g = ops::G::new();
    let ops = ops::all_ops(&mut g);
    let mut op_names = Vec::new();
    let mut dtypes_seen: BTreeSet<String> = BTreeSet::new();
    for (label, op) in &ops {
        let mut name = op_name(op);
        if let Some(label) = label {
            name = format!("{name}/{label}");
        }
        for t in op.nodes() {
            dtypes_seen.insert(dtype_key(&t.dtype));
        }
        vec.add("op", &name, op);
        op_names.push(name);
    }
    let leaves = expected_leaves();
    check_covers("op", leaves.iter().cloned(), &op_names);
    let extra: Vec<&String> = op_names.iter().filter(|n| !leaves.contains(base(n))).collect();
    assert!(extra.is_empty(), "op names that are not leaves: {extra:?}");
    // Every DType (Bool stores separately, QFloat once) appears in some op's tensors.
    for d in values::dtypes() {
        let key = dtype_key(&d.1);
        assert!(dtypes_seen.contains(&key), "no op uses dtype {key}");
    }

    // ---- dtype ---------------------------------------------------------------------------
    let mut names = Vec::new();
    for (name, d) in values::dtypes() {
        vec.add("dtype", &name, &d);
        names.push(name);
    }
    let mut expected: Vec<String> = Vec::new();
    for v in variants_of::<DType>() {
        match *v {
            "Bool" => expected.extend(variants_of::<BoolStore>().iter().map(|s| format!("Bool.{s}"))),
            other => expected.push(other.to_string()),
        }
    }
    check_covers("dtype", expected, &names);

    // ---- tensor_data ---------------------------------------------------------------------
    let mut names = Vec::new();
    for (name, d) in values::tensor_data() {
        vec.add("tensor_data", &name, &d);
        names.push(name);
    }
    let expected: Vec<String> = values::dtypes()
        .into_iter()
        .filter(|(n, _)| !n.starts_with("QFloat"))
        .map(|(n, _)| n)
        .chain(["QFloat".to_string()])
        .collect();
    check_covers("tensor_data", expected, &names);

    // ---- settings ------------------------------------------------------------------------
    for (name, s) in values::settings() {
        vec.add("settings", &name, &s);
    }

    // ---- frame ---------------------------------------------------------------------------
    let mut names = Vec::new();
    for (name, frame) in values::frames() {
        vec.add("frame", &name, &frame);
        names.push(name);
    }
    let expected = variants_of::<Task>()
        .iter()
        .map(|t| format!("Task.{t}"))
        .chain(["Init".to_string(), "Close".to_string(), "Batch".to_string()]);
    check_covers("frame", expected, &names);
    assert_eq!(variants_of::<RemoteMessage>(), ["Task", "Init", "Close"]);

    // ---- response ------------------------------------------------------------------------
    let mut names = Vec::new();
    for (name, r) in values::responses() {
        let bytes = vec.add("response", &name, &r);
        if name == "InitRefused/IncompatibleProtocol" {
            // burn-remote's own test (shared/task.rs) pins this encoding; check the mirror agrees.
            #[cfg(not(burn_023))]
            let expected = [
                &[0x92, 0x81, 0xab][..],
                b"InitRefused",
                &[0x81, 0xb4],
                b"IncompatibleProtocol",
                &[0x91, 0x02, 0x00],
            ]
            .concat();
            // 0.23's test pins the same layout (with server_version 2); this vector carries 6.
            #[cfg(burn_023)]
            let expected = [
                &[0x92, 0x81, 0xab][..],
                b"InitRefused",
                &[0x81, 0xb4],
                b"IncompatibleProtocol",
                &[0x91, PROTOCOL_VERSION as u8, 0x00],
            ]
            .concat();
            assert_eq!(bytes, expected, "mirror disagrees with burn-remote's pinned refusal encoding");
        }
        names.push(name);
    }
    let expected = variants_of::<TaskResponseContent>().iter().map(|t| t.to_string());
    check_covers("response", expected, &names);
    for r in variants_of::<SessionRefusal>() {
        assert!(names.iter().any(|n| n == &format!("InitRefused/{r}")), "no InitRefused/{r}");
    }
    for e in variants_of::<ExecutionError>() {
        #[cfg(not(burn_023))]
        assert!(names.iter().any(|n| n == &format!("ReadTensor/Err-{e}")), "no ReadTensor/Err-{e}");
        #[cfg(burn_023)]
        assert!(names.iter().any(|n| n == &format!("ReadTensors/Err-{e}")), "no ReadTensors/Err-{e}");
    }

    // ---- data ----------------------------------------------------------------------------
    let mut names = Vec::new();
    for (name, m) in values::data_messages() {
        vec.add("data", &name, &m);
        names.push(name);
    }
    check_covers("data", variants_of::<ExternalCommMessage>().iter().map(|t| t.to_string()), &names);

    // ---- write ---------------------------------------------------------------------------
    let mut text = String::new();
    #[cfg(not(burn_023))]
    writeln!(text, "# generator: torchbridge-interop golden (tests/interop/src/bin/golden.rs); regenerate with scripts/regen-golden").unwrap();
    #[cfg(not(burn_023))]
    writeln!(text, "# burn: 0.22.1 (burn-ir, burn-std, burn-backend, burn-remote, burn-communication 0.22.1; cubecl-common 0.11.3)").unwrap();
    #[cfg(burn_023)]
    writeln!(text, "# generator: torchbridge-interop-023 golden_023 (tests/interop/src/bin/golden.rs with cfg(burn_023)); regenerate with scripts/regen-golden-0.23").unwrap();
    #[cfg(burn_023)]
    writeln!(text, "# burn: 0.23.0-pre.1 (burn-ir, burn-std, burn-backend, burn-remote, burn-communication 0.23.0-pre.1; cubecl-common 0.12.0-pre.1)").unwrap();
    writeln!(text, "# rmp-serde: 1.3.1 (rmp_serde::to_vec, default config: structs as arrays, enums as {{name: value}} or bare name)").unwrap();
    writeln!(text, "# burn-remote PROTOCOL_VERSION: {PROTOCOL_VERSION}").unwrap();
    writeln!(text, "# leaves: {}", leaves.len()).unwrap();
    let counts: Vec<String> = vec.counts.iter().map(|(k, n)| format!("{k}={n}")).collect();
    writeln!(text, "# vectors: {} ({})", vec.lines.len(), counts.join(" ")).unwrap();
    writeln!(text, "# format: KIND<TAB>NAME<TAB>HEX (lowercase hex of the exact msgpack bytes)").unwrap();
    for (kind, name, hex) in &vec.lines {
        writeln!(text, "{kind}\t{name}\t{hex}").unwrap();
    }
    if let Some(parent) = out_path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&out_path, text).unwrap();
    eprintln!(
        "wrote {} vectors ({}) to {}; operation leaves: {}",
        vec.lines.len(),
        counts.join(" "),
        out_path.display(),
        leaves.len()
    );
}

fn dtype_key(d: &DType) -> String {
    match d {
        DType::Bool(s) => format!("Bool.{s:?}"),
        DType::QFloat(_) => "QFloat".to_string(),
        other => format!("{other:?}"),
    }
}
