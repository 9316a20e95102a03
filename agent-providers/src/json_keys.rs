//! Reading the stream's JSON objects by hand, where a derived `Deserialize` ran more code than
//! the chunk's data: keys (and names such as an event's `type`) matched as one-byte enums, each
//! field read once, and an optional object read into its slot in place.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};

/// Declares the names of an object's keys (or of a string value's kinds) this client reads as a
/// one-byte identifier enum with a catch-all `Other`, matched from the text: what
/// `#[serde(field_identifier)]` derives, with the inline hint the derive leaves out. Without
/// it, a default release build (16 codegen units) called each key's match as a function of its
/// own, about nine calls a chunk for the keys alone, where one codegen unit or LTO inlined them
/// (`whole_turn_agent` in benches/stream.rs).
macro_rules! keys {
    ($(#[$doc:meta])* $vis:vis enum $name:ident { $($variant:ident = $key:literal,)* }) => {
        $(#[$doc])*
        $vis enum $name {
            $($variant,)*
            /// A name this client does not read.
            Other,
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            #[inline]
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> Result<Self, D::Error> {
                /// Matches a name's text.
                struct Name;

                impl ::serde::de::Visitor<'_> for Name {
                    type Value = $name;

                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str("a string")
                    }

                    #[inline]
                    fn visit_str<E: ::serde::de::Error>(self, name: &str) -> Result<$name, E> {
                        Ok(match name {
                            $($key => $name::$variant,)*
                            _ => $name::Other,
                        })
                    }
                }

                deserializer.deserialize_identifier(Name)
            }
        }
    };
}

pub(crate) use keys;

/// Reads a field's value into its slot, unless the field came already (an error, as a derived
/// `Deserialize` makes it).
#[inline]
pub(crate) fn read_once<'de, M: MapAccess<'de>, T: Deserialize<'de>>(
    map: &mut M,
    slot: &mut Option<T>,
    seen: &mut bool,
    name: &'static str,
) -> Result<(), M::Error> {
    first(seen, name)?;
    *slot = map.next_value()?;
    Ok(())
}

/// Marks a field as read, or fails if it was read already: a field given twice is an error, as
/// a derived `Deserialize` makes it.
#[inline]
pub(crate) fn first<E: de::Error>(seen: &mut bool, name: &'static str) -> Result<(), E> {
    if std::mem::replace(seen, true) {
        return Err(duplicate(name));
    }
    Ok(())
}

/// The error of a field given twice, out of line: its code stays apart from the readers'.
#[cold]
#[inline(never)]
fn duplicate<E: de::Error>(name: &'static str) -> E {
    E::duplicate_field(name)
}

/// An object whose fields a hand-written reader fills: in place ([`InPlace`]) or as a new value
/// ([`object`]).
pub(crate) trait Fields<'de>: Default {
    /// What the object is, for an error message ("a delta object").
    const WHAT: &'static str;

    /// Reads the object's fields into `self`, which starts as its default.
    fn read<M: MapAccess<'de>>(&mut self, map: M) -> Result<(), M::Error>;
}

/// Reads an object (or `null`, which leaves it `None`) into its empty slot in place; the key it
/// is read for must come once ([`first`]). A stream's delta is 100-200 bytes: built and
/// returned as a value, it was moved with a `memcpy` at each level of serde's return values,
/// for every chunk (`whole_turn_agent` in benches/stream.rs).
pub(crate) struct InPlace<'s, T>(pub(crate) &'s mut Option<T>);

impl<'de, T: Fields<'de>> DeserializeSeed<'de> for InPlace<'_, T> {
    type Value = ();

    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de, T: Fields<'de>> Visitor<'de> for InPlace<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::WHAT)
    }

    /// Leaves the slot as it is: empty, as its key comes once ([`first`]). (Emptied here, the
    /// slot's drop glue was called for every object read: `anthropic_model` in
    /// benches/chunks.rs, 20 instructions a chunk.)
    #[inline]
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    #[inline]
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    #[inline]
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }

    #[inline]
    fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<(), M::Error> {
        self.0.insert(T::default()).read(map)
    }
}

/// Reads an object into a new `T` (see [`Fields`]): for objects read as values, where
/// [`InPlace`] fills a slot.
pub(crate) fn object<'de, D: Deserializer<'de>, T: Fields<'de>>(
    deserializer: D,
) -> Result<T, D::Error> {
    deserializer.deserialize_map(Whole(PhantomData))
}

/// The visitor of [`object`].
struct Whole<T>(PhantomData<T>);

impl<'de, T: Fields<'de>> Visitor<'de> for Whole<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::WHAT)
    }

    #[inline]
    fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<T, M::Error> {
        let mut value = T::default();
        value.read(map)?;
        Ok(value)
    }
}

/// Reads a token count: a count that is not a non-negative number (a string, a negative or
/// fractional number, an object) is no count, rather than a malformed chunk that would fail a
/// complete answer over its accounting. A number past `u64` saturates, even one past `f64`
/// (`1e400`): the value is read as its JSON text, since serde_json refuses such a number before
/// any visitor sees it. (A stream's JSON is read from a string, whose text a raw value borrows.)
pub(crate) fn token_count<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u64>, D::Error> {
    let text = <&serde_json::value::RawValue>::deserialize(deserializer)?.get();
    Ok(match text.as_bytes().first() {
        Some(b'-' | b'0'..=b'9') => count(text),
        Some(b'"') => serde_json::from_str::<String>(text)
            .ok()
            .and_then(|count| count.parse().ok()),
        _ => None,
    })
}

/// A JSON number as a token count: `None` unless a non-negative whole number; saturating.
fn count(number: &str) -> Option<u64> {
    if let Ok(count) = number.parse() {
        return Some(count);
    }
    // `as` saturates: `1e30` and `1e400` (infinite as an `f64`) are `u64::MAX`.
    let value: f64 = number.parse().ok()?;
    (value == f64::INFINITY || (value >= 0.0 && value.fract() == 0.0)).then_some(value as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_count_that_is_no_count_is_none_and_no_error() {
        #[derive(Deserialize)]
        struct Usage {
            #[serde(default, deserialize_with = "token_count")]
            tokens: Option<u64>,
        }
        let read = |json: &str| {
            serde_json::from_str::<Usage>(json)
                .map(|usage| usage.tokens)
                .map_err(|e| e.to_string())
        };
        for (json, tokens) in [
            (r#"{"tokens":12}"#, Some(12)),
            (r#"{"tokens":12.0}"#, Some(12)),
            (r#"{"tokens":1e30}"#, Some(u64::MAX)),
            (r#"{"tokens":1e400}"#, Some(u64::MAX)),
            (r#"{"tokens":18446744073709551616}"#, Some(u64::MAX)),
            (r#"{"tokens":-1e400}"#, None),
            (r#"{"tokens":-0}"#, Some(0)),
            (r#"{"tokens":"12"}"#, Some(12)),
            (r#"{"tokens":-3}"#, None),
            (r#"{"tokens":1.5}"#, None),
            (r#"{"tokens":"many"}"#, None),
            (r#"{"tokens":null}"#, None),
            (r#"{"tokens":true}"#, None),
            (r#"{"tokens":[1,2]}"#, None),
            (r#"{"tokens":{"a":1}}"#, None),
            (r#"{}"#, None),
        ] {
            assert_eq!(read(json), Ok(tokens), "{json}");
        }
    }
}
