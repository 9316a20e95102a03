//! Reading the stream's JSON objects by hand, where a derived `Deserialize` ran more code than
//! the chunk's data: keys (and names such as an event's `type`) matched as one-byte enums, and
//! each field read once.

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

use serde::Deserialize;
use serde::de::{self, MapAccess};

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
