//! An incremental parser of streamed JSON ([`PartialJson`]): fed the text as it arrives, it keeps
//! what it parsed so far in a stack of open arrays and objects, and gives the value repaired
//! (open strings, arrays and objects read as closed) without reading any text twice.

use serde_json::{Map, Number, Value};

/// Below this many bytes read, [`PartialJson::snapshot`] gives every change.
const SMALL: usize = 1024;

/// The deepest nesting of arrays and objects read: the deepest serde_json parses (its recursion
/// limit), so a deeper text would not parse whole either. A value nested without bound (text a
/// server streams) would overflow the stack when copied or dropped, both of which recurse.
const MAX_DEPTH: usize = 127;

/// Parses JSON text given in pieces, keeping the value read so far.
///
/// A piece costs what it adds, not a parse of everything before it: the parser keeps its
/// state between pieces (the open arrays and objects, the key and the string, number or
/// literal being read). The repaired value is built on demand ([`value`](Self::value),
/// [`snapshot`](Self::snapshot)): an open string holds its text so far, an open array or
/// object the items and members read so far; a member whose key or value has not started, a
/// number not yet valid (`-`, `1.`: the last valid one is kept) and a literal not yet whole
/// (`tru`) are left out. Text that is not JSON stops the reading (the value keeps what came
/// before), and so does the end of the root value (what follows, such as the closing fence
/// of a Markdown block, is ignored). So does an array or object nested deeper than 127 (the
/// deepest serde_json parses, which would refuse the whole text too).
///
/// ```
/// use agent_core::PartialJson;
/// use serde_json::json;
///
/// let mut json = PartialJson::new();
/// json.push(r#"{"number": "INV-7", "lines": [{"qty": 2}, {"q"#);
/// assert_eq!(json.value(), Some(json!({"number": "INV-7", "lines": [{"qty": 2}, {}]})));
/// json.push(r#"ty": 3}], "total": 12}"#);
/// assert!(json.is_complete());
/// assert_eq!(json.value(), Some(json!({"number": "INV-7", "lines": [{"qty": 2}, {"qty": 3}], "total": 12})));
/// ```
#[derive(Debug, Default)]
pub struct PartialJson {
    /// The root value, once complete.
    root: Option<Value>,
    /// The open arrays and objects, outermost first.
    stack: Vec<Frame>,
    token: Token,
    /// The text is not JSON.
    failed: bool,
    /// Bytes given so far.
    read: usize,
    /// The value changed since the last snapshot.
    changed: bool,
    /// Bytes given at the last snapshot.
    snapshot_at: usize,
}

/// An open array or object: what it holds so far and what it reads next.
#[derive(Debug)]
struct Frame {
    container: Container,
    expect: Expect,
    /// The key of the member being read (complete once `expect` is past `Colon`).
    key: String,
}

#[derive(Debug)]
enum Container {
    Array(Vec<Value>),
    Object(Map<String, Value>),
}

/// What an open array or object reads next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// Its first item (or key), or its end.
    First,
    /// An item (or key) after a comma.
    Next,
    /// The colon after a key.
    Colon,
    /// A member's value.
    Value,
    /// A comma or its end.
    CommaOrEnd,
}

/// The bytes of an escape after its backslash, kept inline (an escape costs no allocation).
#[derive(Debug, Default)]
struct Escape {
    bytes: [u8; 5],
    len: usize,
}

/// A string, number or literal being read.
#[derive(Debug, Default)]
enum Token {
    #[default]
    None,
    Str {
        /// An object's key (else a value).
        key: bool,
        text: String,
        /// The escape being read, after its backslash (at most `uXXXX`).
        escape: Option<Escape>,
        /// A high surrogate waiting for its low half.
        high: Option<u32>,
    },
    Number {
        text: String,
        /// The last valid number its text made.
        shown: Option<Number>,
    },
    Literal {
        word: &'static str,
        matched: usize,
    },
}

impl PartialJson {
    /// A parser that has read nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value read so far, repaired (a copy); `None` until the root value starts.
    pub fn value(&self) -> Option<Value> {
        if let Some(root) = &self.root {
            return Some(root.clone());
        }
        let mut inner = match &self.token {
            Token::Str {
                key: false, text, ..
            } => Some(Value::String(text.clone())),
            Token::Number { shown, .. } => shown.clone().map(Value::Number),
            _ => None,
        };
        for frame in self.stack.iter().rev() {
            inner = Some(match &frame.container {
                Container::Array(items) => {
                    let mut items = items.clone();
                    items.extend(inner);
                    Value::Array(items)
                }
                Container::Object(members) => {
                    let mut members = members.clone();
                    if let Some(value) = inner
                        && frame.expect == Expect::CommaOrEnd
                    {
                        members.insert(frame.key.clone(), value);
                    }
                    Value::Object(members)
                }
            });
        }
        inner
    }

    /// Whether the root value is complete.
    pub fn is_complete(&self) -> bool {
        self.root.is_some()
    }

    /// Whether the text stopped being JSON (the value keeps what came before).
    pub fn is_failed(&self) -> bool {
        self.failed
    }

    /// Reads the next piece of the text.
    pub fn push(&mut self, piece: &str) {
        self.read += piece.len();
        let bytes = piece.as_bytes();
        let mut at = 0;
        while at < bytes.len() && !self.failed && self.root.is_none() {
            at = match self.token {
                Token::None => self.structure(bytes[at], at),
                Token::Str { .. } => self.string(piece, at),
                Token::Number { .. } => self.number(piece, at),
                Token::Literal { .. } => self.literal(bytes, at),
            };
        }
        // A number is shown as soon as its text so far is one.
        if let Token::Number { text, shown } = &mut self.token
            && let Ok(number) = text.parse::<Number>()
            && shown.as_ref() != Some(&number)
        {
            *shown = Some(number);
            self.changed = true;
        }
    }

    /// A copy of the value when it changed enough since the last snapshot to be worth one:
    /// every change while at most 1 KB was read, then each time the text read doubled. The
    /// copies then cost about one copy of the final value in all, whatever the number of
    /// pieces (a large value's last snapshot may lag its end: [`value`](Self::value) has it).
    pub fn snapshot(&mut self) -> Option<Value> {
        if !self.changed {
            return None;
        }
        let grown = self.read - self.snapshot_at;
        if self.read > SMALL && grown < self.snapshot_at {
            return None;
        }
        self.changed = false;
        self.snapshot_at = self.read;
        self.value()
    }

    /// Reads one byte outside strings, numbers and literals; the position after what it took.
    fn structure(&mut self, byte: u8, at: usize) -> usize {
        if byte.is_ascii_whitespace() {
            return at + 1;
        }
        let Some(frame) = self.stack.last_mut() else {
            return self.start_value(byte, at);
        };
        let object = matches!(frame.container, Container::Object(_));
        match (object, frame.expect, byte) {
            (false, Expect::First | Expect::CommaOrEnd, b']')
            | (true, Expect::First | Expect::CommaOrEnd, b'}') => {
                if let Some(frame) = self.stack.pop() {
                    self.complete(match frame.container {
                        Container::Array(items) => Value::Array(items),
                        Container::Object(members) => Value::Object(members),
                    });
                }
                at + 1
            }
            (_, Expect::CommaOrEnd, b',') => {
                frame.expect = Expect::Next;
                at + 1
            }
            (false, Expect::First | Expect::Next, _) | (true, Expect::Value, _) => {
                self.start_value(byte, at)
            }
            (true, Expect::First | Expect::Next, b'"') => {
                frame.expect = Expect::Colon;
                self.token = Token::Str {
                    key: true,
                    text: std::mem::take(&mut frame.key),
                    escape: None,
                    high: None,
                };
                if let Token::Str { text, .. } = &mut self.token {
                    text.clear();
                }
                at + 1
            }
            (true, Expect::Colon, b':') => {
                frame.expect = Expect::Value;
                at + 1
            }
            _ => self.fail(at),
        }
    }

    /// Starts a value at `byte`.
    fn start_value(&mut self, byte: u8, at: usize) -> usize {
        if let Some(frame) = self.stack.last_mut() {
            frame.expect = Expect::CommaOrEnd;
        }
        self.changed = true;
        let (token, container) = match byte {
            b'{' | b'[' if self.stack.len() == MAX_DEPTH => return self.fail(at),
            b'{' => (Token::None, Some(Container::Object(Map::new()))),
            b'[' => (Token::None, Some(Container::Array(Vec::new()))),
            b'"' => {
                let string = Token::Str {
                    key: false,
                    text: String::new(),
                    escape: None,
                    high: None,
                };
                self.token = string;
                return at + 1;
            }
            b'-' | b'0'..=b'9' => {
                self.token = Token::Number {
                    text: String::new(),
                    shown: None,
                };
                return at;
            }
            b't' | b'f' | b'n' => {
                let word = match byte {
                    b't' => "true",
                    b'f' => "false",
                    _ => "null",
                };
                self.token = Token::Literal { word, matched: 0 };
                return at;
            }
            _ => return self.fail(at),
        };
        self.token = token;
        if let Some(container) = container {
            self.stack.push(Frame {
                container,
                expect: Expect::First,
                key: String::new(),
            });
        }
        at + 1
    }

    /// A value is complete: it goes into the innermost array or object, or is the root.
    fn complete(&mut self, value: Value) {
        self.token = Token::None;
        self.changed = true;
        match self.stack.last_mut() {
            None => self.root = Some(value),
            Some(frame) => match &mut frame.container {
                Container::Array(items) => items.push(value),
                Container::Object(members) => {
                    members.insert(frame.key.clone(), value);
                }
            },
        }
    }

    fn fail(&mut self, at: usize) -> usize {
        self.failed = true;
        at
    }

    /// Reads string text from `at`: a run up to the next quote or backslash at once.
    fn string(&mut self, piece: &str, at: usize) -> usize {
        let bytes = piece.as_bytes();
        let Token::Str {
            key,
            text,
            escape,
            high,
        } = &mut self.token
        else {
            return at;
        };
        if !*key {
            self.changed = true;
        }
        if let Some(pending) = escape {
            pending.bytes[pending.len] = bytes[at];
            pending.len += 1;
            let code = match escaped(&pending.bytes[..pending.len]) {
                Escaped::More => return at + 1,
                Escaped::Invalid => return self.fail(at),
                Escaped::Char(c) => u32::from(c),
                Escaped::Unit(unit) => unit,
            };
            *escape = None;
            let code = match (high.take(), code) {
                (None, 0xD800..=0xDBFF) => {
                    *high = Some(code);
                    return at + 1;
                }
                (Some(high), 0xDC00..=0xDFFF) => {
                    0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)
                }
                (None, code) if !(0xDC00..=0xDFFF).contains(&code) => code,
                _ => return self.fail(at),
            };
            let Some(c) = char::from_u32(code) else {
                return self.fail(at);
            };
            text.push(c);
            return at + 1;
        }
        let end = bytes[at..]
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            .map_or(bytes.len(), |offset| at + offset);
        if high.is_some() && (end > at || bytes.get(end) != Some(&b'\\')) {
            // A high surrogate not followed by an escaped low one.
            return self.fail(at);
        }
        text.push_str(&piece[at..end]);
        match bytes.get(end) {
            None => end,
            Some(b'"') => {
                let (key, text) = (*key, std::mem::take(text));
                if key {
                    // The key waits in its frame for the member's value.
                    self.token = Token::None;
                    if let Some(frame) = self.stack.last_mut() {
                        frame.key = text;
                    }
                } else {
                    self.complete(Value::String(text));
                }
                end + 1
            }
            Some(b'\\') => {
                *escape = Some(Escape::default());
                end + 1
            }
            Some(_) => self.fail(end),
        }
    }

    /// Reads number text from `at`; the number ends at the first byte that cannot be in one.
    fn number(&mut self, piece: &str, at: usize) -> usize {
        let bytes = piece.as_bytes();
        let end = bytes[at..]
            .iter()
            .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
            .map_or(bytes.len(), |offset| at + offset);
        let Token::Number { text, .. } = &mut self.token else {
            return at;
        };
        if end == bytes.len() {
            text.push_str(&piece[at..end]);
            return end;
        }
        let parsed = if text.is_empty() {
            number(&piece[at..end])
        } else {
            text.push_str(&piece[at..end]);
            number(text)
        };
        match parsed {
            Some(number) => {
                self.complete(Value::Number(number));
                end
            }
            None => self.fail(end),
        }
    }

    /// Reads a literal (`true`, `false`, `null`) byte by byte.
    fn literal(&mut self, bytes: &[u8], at: usize) -> usize {
        let Token::Literal { word, matched } = &mut self.token else {
            return at;
        };
        if word.as_bytes()[*matched] != bytes[at] {
            return self.fail(at);
        }
        *matched += 1;
        if *matched == word.len() {
            let value = match *word {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => Value::Null,
            };
            self.complete(value);
        }
        at + 1
    }
}

/// A whole number's text as a number: plain digits directly, the rest as serde_json reads it.
fn number(text: &str) -> Option<Number> {
    let plain = text.len() <= 18
        && text.bytes().all(|b| b.is_ascii_digit())
        && !(text.len() > 1 && text.starts_with('0'));
    if plain {
        return text.parse::<u64>().ok().map(Number::from);
    }
    text.parse::<Number>().ok()
}

/// What an escape read so far (after its backslash) stands for.
enum Escaped {
    More,
    Invalid,
    Char(char),
    /// A `\uXXXX` code unit (maybe half of a surrogate pair).
    Unit(u32),
}

fn escaped(escape: &[u8]) -> Escaped {
    let Some((&first, digits)) = escape.split_first() else {
        return Escaped::More;
    };
    let c = match first {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' if !digits.iter().all(u8::is_ascii_hexdigit) => return Escaped::Invalid,
        b'u' if digits.len() < 4 => return Escaped::More,
        b'u' => {
            let unit = digits.iter().fold(0, |unit, &digit| {
                unit * 16 + char::from(digit).to_digit(16).unwrap_or(0)
            });
            return Escaped::Unit(unit);
        }
        _ => return Escaped::Invalid,
    };
    Escaped::Char(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(pieces: &[&str]) -> PartialJson {
        let mut json = PartialJson::new();
        for piece in pieces {
            json.push(piece);
        }
        json
    }

    #[test]
    fn open_values_read_as_closed_and_incomplete_members_are_left_out() {
        let cases = [
            (r#"{"a": "hel"#, json!({"a": "hel"})),
            (r#"{"a": 1, "b"#, json!({"a": 1})),
            (r#"{"a": 1, "b":"#, json!({"a": 1})),
            (r#"[1, 2"#, json!([1, 2])),
            (r#"[1, 2."#, json!([1])),
            (r#"[true, fa"#, json!([true])),
            (r#"{"a": [{"b": null}, {"#, json!({"a": [{"b": null}, {}]})),
            ("-", Value::Null),
        ];
        for (text, expected) in cases {
            let json = parsed(&[text]);
            assert_eq!(json.value().unwrap_or(Value::Null), expected, "{text}");
            assert!(!json.is_complete() && !json.is_failed(), "{text}");
        }
    }

    #[test]
    fn escapes_split_across_pieces_decode_surrogate_pairs_included() {
        let json = parsed(&[r#"["a\"#, r#"nb\u00"#, r#"e9 \ud83d"#, r#"\ude00", "\/"]"#]);
        assert_eq!(json.value(), Some(json!(["a\nb\u{e9} \u{1f600}", "/"])));
        assert!(json.is_complete());
        assert!(parsed(&[r#""\ud83d x""#]).is_failed());
        assert!(parsed(&[r#""\udc00""#]).is_failed());
    }

    #[test]
    fn what_follows_the_root_is_ignored_and_bad_text_stops_the_reading() {
        let json = parsed(&["{\"a\": 1}\n```", " more"]);
        assert_eq!(json.value(), Some(json!({"a": 1})));
        let json = parsed(&[r#"{"a": [1,]"#]);
        assert!(json.is_failed());
        assert_eq!(json.value(), Some(json!({"a": [1]})));
    }

    /// Text nested deeper than serde_json parses stops the reading: a value nested without
    /// bound overflowed the stack when it was copied or dropped.
    #[test]
    fn nesting_deeper_than_serde_json_parses_stops_the_reading() {
        let deepest = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        let json = parsed(&[&deepest]);
        assert!(json.is_complete());
        assert_eq!(json.value(), serde_json::from_str(&deepest).ok());
        assert!(serde_json::from_str::<Value>(&format!("[{deepest}]")).is_err());
        let mut json = parsed(&[r#"{"a":"#, &"[".repeat(1_000_000)]);
        assert!(json.is_failed());
        let mut value = json.snapshot().expect("what came before");
        let mut depth = 0;
        loop {
            value = match value {
                Value::Object(mut members) => members.remove("a").unwrap_or_default(),
                Value::Array(mut items) => items.pop().unwrap_or_default(),
                _ => break,
            };
            depth += 1;
        }
        assert_eq!(depth, MAX_DEPTH);
    }

    #[test]
    fn snapshots_give_each_change_then_thin_out_as_the_text_grows() {
        let mut json = PartialJson::new();
        json.push("[");
        assert_eq!(json.snapshot(), Some(json!([])));
        assert_eq!(json.snapshot(), None, "nothing changed");
        json.push(" ");
        assert_eq!(json.snapshot(), None);
        let item = format!("\"{}\",", "x".repeat(98));
        let mut given = 2;
        let mut taken = Vec::new();
        for _ in 0..200 {
            json.push(&item);
            given += item.len();
            if json.snapshot().is_some() {
                taken.push(given);
            }
        }
        // Every piece under 4 KB, then each time the text doubled.
        let small = taken.iter().filter(|&&at| at <= SMALL).count();
        assert_eq!(small, SMALL / item.len());
        let large: Vec<usize> = taken.into_iter().filter(|&at| at > SMALL).collect();
        assert!(large.windows(2).all(|w| w[1] >= 2 * w[0]), "{large:?}");
        json.push("\"end\"]");
        assert!(json.is_complete());
        assert_eq!(json.snapshot(), None, "the text did not double");
        assert_eq!(json.value().unwrap().as_array().unwrap().len(), 201);
    }

    /// Any JSON value, a few levels deep, with strings that need escapes.
    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (proptest::num::f64::NORMAL | proptest::num::f64::ZERO).prop_map(Value::from),
            "(\\PC|[\"\\\\/\u{0}-\u{1f}\u{1f600}]){0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::vec(("[a-z\"\\\\é]{0,6}", inner), 0..6)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Every prefix of a valid document reads without a panic and is never taken for
        /// bad JSON; the whole document, fed in pieces, is the value serde_json reads.
        #[test]
        fn prefixes_never_fail_and_the_whole_document_is_serde_jsons_value(
            value in any_json(),
            pretty in proptest::prelude::any::<bool>(),
            cuts in proptest::collection::vec(0usize..10_000, 0..12),
        ) {
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            let expected: Value = serde_json::from_str(&text).unwrap();
            for end in (0..=text.len()).filter(|&end| text.is_char_boundary(end)) {
                let prefix = parsed(&[&text[..end]]);
                proptest::prop_assert!(!prefix.is_failed(), "{:?}", &text[..end]);
            }
            let mut cuts: Vec<usize> = cuts
                .into_iter()
                .map(|cut| cut % (text.len() + 1))
                .filter(|&cut| text.is_char_boundary(cut))
                .collect();
            cuts.sort_unstable();
            let mut json = PartialJson::new();
            let mut from = 0;
            for cut in cuts.into_iter().chain([text.len()]) {
                json.push(&text[from..cut]);
                from = cut;
                let _ = json.snapshot();
            }
            proptest::prop_assert_eq!(json.value(), Some(expected.clone()));
            // A number at the root has no end in the text: it is only shown.
            proptest::prop_assert!(json.is_complete() || expected.is_number());
        }
    }
}
