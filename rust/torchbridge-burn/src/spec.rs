//! `NAME::spec`, the host's record of a hosted module's parameters and, for given inputs, its
//! outputs: read through the custom op (growing the buffer until the record fits) and parsed.

use burn::backend::Remote;
use burn::prelude::*;
use burn::tensor::DType;
use burn_ir::ScalarIr;
use burn_remote::RemoteDevice;

use crate::Error;
use crate::op::{self, Prim};

fn dtype_of(code: i64) -> Result<DType, Error> {
    Ok(match code {
        0 => DType::F64,
        1 => DType::F32,
        2 => DType::F16,
        3 => DType::BF16,
        4 => DType::I64,
        5 => DType::I32,
        6 => DType::I16,
        7 => DType::I8,
        8 => DType::U8,
        9 => DType::Bool(burn::tensor::BoolStore::Native),
        c => return Err(Error::Host(format!("spec: unknown dtype code {c}"))),
    })
}

/// The values of a spec record, read in order.
struct Cursor<'a> {
    spec: &'a [i64],
    at: usize,
}

type Entries = Vec<(Shape, DType)>;

impl Cursor<'_> {
    fn next(&mut self) -> Result<i64, Error> {
        let v = self.spec.get(self.at).copied();
        self.at += 1;
        v.ok_or_else(|| Error::Host(format!("spec: cannot read {:?}", self.spec)))
    }

    fn entries(&mut self, count: i64) -> Result<Entries, Error> {
        (0..count)
            .map(|_| {
                let dtype = dtype_of(self.next()?)?;
                let rank = self.next()?;
                let dims = (0..rank)
                    .map(|_| self.next().map(|d| d as usize))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok((Shape::from(dims), dtype))
            })
            .collect()
    }
}

/// `[L, 1, P, (dtype, rank, dims...) x P, K, (dtype, rank, dims...) x K]`: the parameters and,
/// when K >= 0, the outputs.
pub(crate) fn parse_spec(spec: &[i64]) -> Result<(Entries, Option<Entries>), Error> {
    let mut c = Cursor { spec, at: 1 };
    let version = c.next()?;
    if version != 1 {
        return Err(Error::Host(format!(
            "spec: format version {version} is not 1"
        )));
    }
    let p = c.next()?;
    let params = c.entries(p)?;
    let k = c.next()?;
    let outputs = if k < 0 { None } else { Some(c.entries(k)?) };
    Ok((params, outputs))
}

pub(crate) fn read_spec(
    device: &RemoteDevice,
    name: &str,
    inputs: Vec<Prim>,
    scalars: &[ScalarIr],
) -> Result<Vec<i64>, Error> {
    let mut capacity = 64usize;
    loop {
        let out = op::call(
            device,
            &format!("{name}::spec"),
            inputs.clone(),
            &[(Shape::from(vec![capacity]), DType::I64)],
            scalars.to_vec(),
        )
        .remove(0);
        let data = Tensor::<1, Int>::from_primitive::<Remote>(out)
            .try_into_data()
            .map_err(|e| Error::Host(e.to_string()))?;
        let values: Vec<i64> = data
            .convert::<i64>()
            .try_to_vec::<i64>()
            .map_err(|e| Error::Host(format!("{e:?}")))?;
        let length = values[0] as usize;
        if length <= capacity {
            return Ok(values[..length].to_vec());
        }
        capacity = length;
    }
}
