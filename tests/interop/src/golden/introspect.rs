//! Read an enum's variant list straight out of its `#[derive(Deserialize)]`.
//!
//! serde's derive passes the complete, ordered list of variant names to
//! `Deserializer::deserialize_enum`. A deserializer that records that list and then fails gives the
//! generator the ground truth of which leaves exist, so coverage is checked against the crate and
//! not against a hand-written list.

use serde::de::{self, DeserializeOwned, Visitor};
use std::fmt;

#[derive(Debug)]
struct Captured(Option<&'static [&'static str]>);

impl fmt::Display for Captured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "introspection stop")
    }
}

impl std::error::Error for Captured {}

impl de::Error for Captured {
    fn custom<T: fmt::Display>(_msg: T) -> Self {
        Captured(None)
    }
}

struct Introspector;

impl<'de> de::Deserializer<'de> for Introspector {
    type Error = Captured;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(Captured(None))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        Err(Captured(Some(variants)))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

/// The variant names of enum `T`, in declaration order, as its serde derive knows them.
pub fn variants_of<T: DeserializeOwned>() -> &'static [&'static str] {
    match T::deserialize(Introspector) {
        Ok(_) => panic!("introspection unexpectedly succeeded"),
        Err(Captured(Some(variants))) => variants,
        Err(Captured(None)) => panic!("{} is not an enum", std::any::type_name::<T>()),
    }
}
