//! [`Text`]: a message's text, shared between its copies instead of copied.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, de};

/// Immutable text that is shared, not copied, when cloned: the text of a [`Message`](crate::Message), a [`ToolCall`](crate::ToolCall), a tool result and a stored row's session
/// id. A turn holds each message several times (its history, the messages it added, the
/// store's row, a step's record, the on_chunk chunk), and cloning a `Text` only counts a
/// reference: a tool result or a loaded history row is not copied once per holder
/// (`agent-providers/benches/stream.rs`, `whole_turn_calls_*` and `whole_turn_history_*`).
///
/// It reads as a `&str` (`Deref`, `AsRef<str>`, `as_str`, `Display`), compares with `str`
/// and `String`, is made from either with `From`/`into()` (empty text and `&'static str` text
/// allocate nothing), and serializes as a JSON string:
///
/// ```
/// use agent_core::{Message, Text};
///
/// let message = Message::user("What is the weather in Paris?");
/// let text: &Text = match &message {
///     Message::User { content } => content,
///     _ => unreachable!(),
/// };
/// assert_eq!(text, "What is the weather in Paris?");
/// assert!(text.starts_with("What"));
/// let owned: String = text.to_string();
/// let shared = text.clone(); // no copy of the text
/// assert_eq!(shared, owned);
/// ```
#[derive(Clone)]
pub struct Text(Repr);

#[derive(Clone)]
enum Repr {
    Static(&'static str),
    Shared(Arc<str>),
}

impl Text {
    /// The empty text (no allocation).
    pub const fn new() -> Self {
        Text(Repr::Static(""))
    }

    /// Text that lives for the whole program (no allocation, nothing counted).
    pub const fn from_static(text: &'static str) -> Self {
        Text(Repr::Static(text))
    }

    /// The text as a `&str`.
    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Static(text) => text,
            Repr::Shared(text) => text,
        }
    }

    /// The text as a `String` (a copy).
    pub fn into_string(self) -> String {
        self.as_str().to_owned()
    }
}

impl Default for Text {
    fn default() -> Self {
        Text::new()
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Self {
        if text.is_empty() {
            Text::new()
        } else {
            Text(Repr::Shared(Arc::from(text)))
        }
    }
}

impl From<String> for Text {
    /// Copies the text once into its shared allocation (none when it is empty).
    fn from(text: String) -> Self {
        Text::from(text.as_str())
    }
}

impl From<&String> for Text {
    fn from(text: &String) -> Self {
        Text::from(text.as_str())
    }
}

impl From<Box<str>> for Text {
    fn from(text: Box<str>) -> Self {
        Text::from(&*text)
    }
}

impl From<Cow<'_, str>> for Text {
    fn from(text: Cow<'_, str>) -> Self {
        Text::from(&*text)
    }
}

impl From<Arc<str>> for Text {
    /// Shares `text`'s allocation (no copy).
    fn from(text: Arc<str>) -> Self {
        Text(Repr::Shared(text))
    }
}

impl From<&Text> for Text {
    fn from(text: &Text) -> Self {
        text.clone()
    }
}

impl From<&Text> for Arc<str> {
    /// Shares the text's allocation (no copy; static text is copied into a new one).
    fn from(text: &Text) -> Self {
        match &text.0 {
            Repr::Static(text) => Arc::from(*text),
            Repr::Shared(text) => text.clone(),
        }
    }
}

impl From<Text> for String {
    fn from(text: Text) -> Self {
        text.into_string()
    }
}

impl From<&Text> for String {
    fn from(text: &Text) -> Self {
        text.as_str().to_owned()
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;

        impl de::Visitor<'_> for TextVisitor {
            type Value = Text;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Text, E> {
                Ok(Text::from(text))
            }
        }

        deserializer.deserialize_str(TextVisitor)
    }
}

/// The impls that make a text type with an `as_str` method read and compare as a `str`:
/// `Serialize` (a JSON string), `Deref<Target = str>`, `AsRef<str>`, `Borrow<str>`, `Debug`
/// and `Display` as the text, equality and hashing by the text, and `==` with `str`, `&str`
/// and `String` both ways. [`Text`] and [`DeltaText`](crate::DeltaText) share them.
macro_rules! str_like {
    ($type:ty) => {
        impl ::serde::Serialize for $type {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl ::std::ops::Deref for $type {
            type Target = str;

            #[inline]
            fn deref(&self) -> &str {
                self.as_str()
            }
        }

        impl AsRef<str> for $type {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }

        impl ::std::borrow::Borrow<str> for $type {
            fn borrow(&self) -> &str {
                self.as_str()
            }
        }

        impl ::std::fmt::Debug for $type {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Debug::fmt(self.as_str(), f)
            }
        }

        impl ::std::fmt::Display for $type {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl PartialEq for $type {
            fn eq(&self, other: &Self) -> bool {
                self.as_str() == other.as_str()
            }
        }

        impl Eq for $type {}

        impl ::std::hash::Hash for $type {
            fn hash<H: ::std::hash::Hasher>(&self, state: &mut H) {
                ::std::hash::Hash::hash(self.as_str(), state);
            }
        }

        $crate::text::str_like!(@compare $type; str, &str, String);
    };
    (@compare $type:ty; $($other:ty),*) => {$(
        impl PartialEq<$other> for $type {
            fn eq(&self, other: &$other) -> bool {
                self.as_str() == AsRef::<str>::as_ref(other)
            }
        }

        impl PartialEq<$type> for $other {
            fn eq(&self, other: &$type) -> bool {
                AsRef::<str>::as_ref(self) == other.as_str()
            }
        }
    )*};
}

pub(crate) use str_like;

str_like!(Text);

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Text;

    #[test]
    fn text_reads_back_whole_and_compares_as_its_str() {
        for text in ["", "tok1 ", "héllo wörld ✓", &"y".repeat(1000)] {
            let shared = Text::from(text);
            assert_eq!(shared.as_str(), text);
            assert_eq!(Text::from(text.to_owned()), text);
            assert_eq!(shared.clone().into_string(), text);
            assert_eq!(format!("{shared}"), text);
            assert_eq!(format!("{shared:?}"), format!("{text:?}"));
            assert_eq!(text, shared);
            assert_eq!(text.to_owned(), shared);
        }
        assert_eq!(Text::new(), "");
        assert_eq!(Text::from_static("static"), Text::from("static"));
        let mut sorted = vec![Text::from("b"), Text::from_static("a")];
        sorted.sort();
        assert_eq!(sorted, ["a", "b"]);
        let read: Text = serde_json::from_str(r#""tok\n ✓""#).expect("a JSON string");
        assert_eq!(read, "tok\n ✓");
        assert_eq!(
            serde_json::to_string(&read).expect("serialize"),
            r#""tok\n ✓""#
        );
        assert!(serde_json::from_str::<Text>("3").is_err());
    }

    #[test]
    fn a_clone_shares_the_text() {
        let text = Text::from(String::from("a tool's result"));
        let clone = text.clone();
        assert!(std::ptr::eq(text.as_str(), clone.as_str()));
        let arc = std::sync::Arc::<str>::from(&text);
        assert!(std::ptr::eq(text.as_str(), &*arc));
        assert_eq!(
            &*std::sync::Arc::<str>::from(&Text::from_static("id")),
            "id"
        );
    }
}
