//! [`DeltaText`]: the text of one streamed delta, held inline when short.

use std::fmt;

use serde::{Deserialize, Deserializer, de};

/// The most bytes of text a [`DeltaText`] holds inline: the type is as large as the `String`
/// it replaces (24 bytes; a larger one made the decoders' frames cross the size at which a
/// move is a `memcpy` call, costing more than the allocation saved), and most streamed deltas
/// (a few tokens) fit.
const INLINE: usize = 22;

/// The text of one streamed delta ([`ModelEvent::TextDelta`](super::ModelEvent::TextDelta),
/// [`Chunk::TextDelta`](crate::Chunk::TextDelta)): text of up to 22 bytes is held inline, longer
/// text on the heap, so the short deltas a model streams cost no allocation on their way
/// from the provider to on_chunk hooks and the stream API.
///
/// It reads as a `&str` (`Deref`, `AsRef<str>`, `Display`), compares with `str` and `String`,
/// and is made from either with `From`/`into()`:
///
/// ```
/// use agent_core::{DeltaText, ModelEvent};
///
/// let event = ModelEvent::TextDelta("Hello".into());
/// let long: DeltaText = String::from("a delta longer than thirty bytes of text").into();
/// assert_eq!(long, "a delta longer than thirty bytes of text");
/// if let ModelEvent::TextDelta(text) = &event {
///     assert_eq!(text.len(), 5);
///     assert_eq!(String::from(text.clone()), "Hello");
/// }
/// ```
#[derive(Clone)]
pub struct DeltaText(Repr);

#[derive(Clone)]
enum Repr {
    /// `bytes[..len]` is the text: copied whole from a `str`, so always valid UTF-8.
    Inline {
        len: u8,
        bytes: [u8; INLINE],
    },
    Heap(Box<str>),
}

impl DeltaText {
    /// The empty text (no allocation).
    pub const fn new() -> Self {
        DeltaText(Repr::Inline {
            len: 0,
            bytes: [0; INLINE],
        })
    }

    /// The text as a `&str`.
    // Inlined (with `deref`): the engine appends each streamed delta through it, and the calls
    // from another crate or codegen unit cost about 4 instructions per chunk
    // (`agent-providers/benches/chunks.rs`).
    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            // Cannot fail: the bytes were copied from a `str`, whole. Checking them again is a
            // few nanoseconds for a short delta, where the allocation it replaces was about 20
            // (`agent-providers/benches/chunks.rs`).
            Repr::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default()
            }
            Repr::Heap(text) => text,
        }
    }

    /// The text's UTF-8 bytes, read without checking them again (`as_str` checks short text,
    /// held inline, each time it is read).
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Repr::Heap(text) => text.as_bytes(),
        }
    }

    /// The text's length in bytes (read without checking the text, unlike `str::len`).
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Inline { len, .. } => usize::from(*len),
            Repr::Heap(text) => text.len(),
        }
    }

    /// Whether the text is empty (read without checking the text, unlike `str::is_empty`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The text as a `String` (allocating only when it was held inline).
    pub fn into_string(self) -> String {
        match self.0 {
            Repr::Inline { .. } => self.as_str().to_owned(),
            Repr::Heap(text) => text.into_string(),
        }
    }
}

impl Default for DeltaText {
    fn default() -> Self {
        DeltaText::new()
    }
}

impl From<&str> for DeltaText {
    fn from(text: &str) -> Self {
        if text.len() <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..text.len()].copy_from_slice(text.as_bytes());
            // `text.len() <= 22`, so it fits in a `u8`.
            let len = text.len() as u8;
            DeltaText(Repr::Inline { len, bytes })
        } else {
            DeltaText(Repr::Heap(text.into()))
        }
    }
}

impl From<String> for DeltaText {
    /// Keeps the `String`'s text where it is (no copy; spare capacity is given back) unless
    /// it is short enough to hold inline.
    fn from(text: String) -> Self {
        if text.len() <= INLINE {
            DeltaText::from(text.as_str())
        } else {
            DeltaText(Repr::Heap(text.into_boxed_str()))
        }
    }
}

impl From<&String> for DeltaText {
    fn from(text: &String) -> Self {
        DeltaText::from(text.as_str())
    }
}

impl From<DeltaText> for String {
    fn from(text: DeltaText) -> Self {
        text.into_string()
    }
}

impl<'de> Deserialize<'de> for DeltaText {
    /// Reads a JSON string: short text is copied inline from the input, with no `String` made
    /// (a provider's decoder reads its deltas' text this way).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;

        impl de::Visitor<'_> for TextVisitor {
            type Value = DeltaText;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<DeltaText, E> {
                Ok(DeltaText::from(text))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<DeltaText, E> {
                Ok(DeltaText::from(text))
            }
        }

        deserializer.deserialize_str(TextVisitor)
    }
}

crate::text::str_like!(DeltaText);

#[cfg(test)]
mod tests {
    use super::DeltaText;

    #[test]
    fn short_and_long_text_read_back_whole() {
        for text in [
            "",
            "tok1 ",
            "héllo wörld ✓",
            &"x".repeat(22),
            &"y".repeat(23),
        ] {
            let delta = DeltaText::from(text);
            assert_eq!(delta.as_str(), text);
            assert_eq!(delta.as_bytes(), text.as_bytes());
            assert_eq!(DeltaText::from(text.to_owned()), text);
            assert_eq!(delta.clone().into_string(), text);
            assert_eq!(format!("{delta}"), text);
            assert_eq!(format!("{delta:?}"), format!("{text:?}"));
        }
        // A multi-byte character that ends exactly at the inline limit.
        let edge = format!("{}é", "a".repeat(20));
        assert_eq!(DeltaText::from(edge.as_str()), edge);
        assert_eq!(DeltaText::new(), "");
        let read: DeltaText = serde_json::from_str(r#""tok\n ✓""#).expect("a JSON string");
        assert_eq!(read, "tok\n ✓");
        assert_eq!(
            serde_json::to_string(&read).expect("serialize"),
            r#""tok\n ✓""#
        );
    }
}
