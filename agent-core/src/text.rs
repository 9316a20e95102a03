//! [`Text`]: a message's text, shared between its copies instead of copied.

use std::borrow::{Borrow, Cow};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

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

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl Deref for Text {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

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

impl Hash for Text {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

/// `Text == str`, `Text == &str`, `Text == String` and the other way round.
macro_rules! compare_with {
    ($($other:ty),*) => {$(
        impl PartialEq<$other> for Text {
            fn eq(&self, other: &$other) -> bool {
                self.as_str() == AsRef::<str>::as_ref(other)
            }
        }

        impl PartialEq<Text> for $other {
            fn eq(&self, other: &Text) -> bool {
                AsRef::<str>::as_ref(self) == other.as_str()
            }
        }
    )*};
}

compare_with!(str, &str, String);

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
