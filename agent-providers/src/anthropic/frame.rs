//! One SSE frame of a Messages stream, read straight from its JSON: the frame and its delta
//! are read in place by hand ([`FrameSeed`]), with their keys and kinds matched as one-byte
//! enums ([`keys!`]); the fields of rarer frames (a message's or a block's start, usage, an
//! error) are derived. A derived `Frame` ran the most code of an Anthropic chunk outside the
//! JSON itself: its field visitors and the frame's type read as an enum were calls of their
//! own through jump tables, each mispredicted as the keys changed (`anthropic_call_model` and
//! `anthropic_model` in `benches/chunks.rs`).

use std::fmt;

use agent_core::DeltaText;
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use crate::json_keys::{Fields, InPlace, first, keys, read_once, token_count};

/// One SSE frame's data, whatever its type: only the fields of its type are present. The
/// fields of rare frames are boxed, so that the frame stays small; a field that is absent costs
/// no allocation.
#[derive(Default)]
pub(super) struct Frame {
    /// The frame's `type`; `None` when it has none (malformed).
    pub(super) kind: Option<FrameKind>,
    pub(super) index: u32,
    /// `message_start`.
    pub(super) message: Option<Box<MessageHead>>,
    /// `content_block_start`.
    pub(super) content_block: Option<Box<BlockHead>>,
    /// `content_block_delta` (a block's delta) and `message_delta` (the stop reason).
    pub(super) delta: Option<Delta>,
    /// `message_delta`.
    pub(super) usage: Option<Box<WireUsage>>,
    /// `error`.
    pub(super) error: Option<Box<ErrorBody>>,
}

keys! {
    /// A frame's `type`; `Other` for `ping` and types this client does not know.
    pub(super) enum FrameKind {
        MessageStart = "message_start",
        ContentBlockStart = "content_block_start",
        ContentBlockDelta = "content_block_delta",
        ContentBlockStop = "content_block_stop",
        MessageDelta = "message_delta",
        MessageStop = "message_stop",
        Error = "error",
    }
}

keys! {
    /// The keys of a frame this client reads.
    enum FrameField {
        Type = "type",
        Index = "index",
        Message = "message",
        ContentBlock = "content_block",
        Delta = "delta",
        Usage = "usage",
        Error = "error",
    }
}

#[derive(Deserialize)]
pub(super) struct MessageHead {
    pub(super) id: Option<String>,
    pub(super) usage: Option<WireUsage>,
    /// Whole blocks a message may already hold when it starts (a response that resumes a
    /// server tool's work starts with the client tool call it makes).
    #[serde(default)]
    pub(super) content: Vec<BlockHead>,
    pub(super) stop_reason: Option<String>,
}

/// Token counts. Anthropic's `input_tokens` leaves out the tokens read from or written to the
/// prompt cache, which are counted apart.
#[derive(Deserialize)]
pub(super) struct WireUsage {
    #[serde(default, deserialize_with = "token_count")]
    pub(super) input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "token_count")]
    pub(super) output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "token_count")]
    pub(super) cache_creation_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "token_count")]
    pub(super) cache_read_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
pub(super) struct BlockHead {
    #[serde(rename = "type")]
    pub(super) kind: BlockKind,
    pub(super) id: Option<String>,
    pub(super) name: Option<String>,
    pub(super) text: Option<DeltaText>,
    pub(super) thinking: Option<String>,
    pub(super) signature: Option<String>,
    /// A `tool_use` block's whole input, when the block arrives complete rather than streamed.
    pub(super) input: Option<serde_json::Value>,
    /// Who called the tool (a server tool calling a client tool), kept as call metadata.
    pub(super) caller: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum BlockKind {
    Text,
    Thinking,
    ToolUse,
    #[serde(other)]
    Other,
}

/// A delta. Its rare strings are `Box<str>` (16 bytes, not 24), which keeps the delta small.
#[derive(Default)]
pub(super) struct Delta {
    pub(super) kind: Option<DeltaKind>,
    /// The delta's piece of text: a `text_delta`'s `text`, a `thinking_delta`'s `thinking` or
    /// an `input_json_delta`'s `partial_json` (a delta carries one; two are a duplicate
    /// field), read inline when short: no allocation for a typical text, thinking or
    /// tool-input chunk (`anthropic_model` and `anthropic_call_model` in `benches/chunks.rs`).
    pub(super) text: Option<DeltaText>,
    pub(super) signature: Option<Box<str>>,
    pub(super) stop_reason: Option<Box<str>>,
    /// `message_delta`: the code-execution container the server tools ran in.
    pub(super) container: Option<Box<serde_json::Value>>,
    /// `citations_delta`: a source the text being streamed cites.
    pub(super) citation: Option<Box<serde_json::Value>>,
}

keys! {
    /// A delta's `type`.
    pub(super) enum DeltaKind {
        TextDelta = "text_delta",
        ThinkingDelta = "thinking_delta",
        SignatureDelta = "signature_delta",
        InputJsonDelta = "input_json_delta",
        CitationsDelta = "citations_delta",
    }
}

keys! {
    /// The keys of a delta this client reads.
    enum DeltaField {
        Type = "type",
        Text = "text",
        Thinking = "thinking",
        PartialJson = "partial_json",
        Signature = "signature",
        StopReason = "stop_reason",
        Container = "container",
        Citation = "citation",
    }
}

#[derive(Default, Deserialize)]
pub(super) struct ErrorBody {
    #[serde(rename = "type", default)]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) message: String,
}

/// Reads a frame's object into a [`Frame`] in place (built and returned as a value, a frame was
/// moved once more at each level of serde's return values). As a derived `Deserialize` did, a
/// field given twice is an error and a key this client does not read is skipped.
pub(super) struct FrameSeed<'f> {
    pub(super) frame: &'f mut Frame,
}

impl<'de> DeserializeSeed<'de> for FrameSeed<'_> {
    type Value = ();

    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FrameSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event object")
    }

    #[inline]
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let frame = self.frame;
        let mut seen = [false; 7];
        while let Some(key) = map.next_key()? {
            match key {
                FrameField::Type => read_once(&mut map, &mut frame.kind, &mut seen[0], "type")?,
                FrameField::Index => {
                    first(&mut seen[1], "index")?;
                    frame.index = map.next_value()?;
                }
                FrameField::Message => {
                    read_once(&mut map, &mut frame.message, &mut seen[2], "message")?
                }
                FrameField::ContentBlock => read_once(
                    &mut map,
                    &mut frame.content_block,
                    &mut seen[3],
                    "content_block",
                )?,
                FrameField::Delta => {
                    first(&mut seen[4], "delta")?;
                    map.next_value_seed(InPlace(&mut frame.delta))?;
                }
                FrameField::Usage => read_once(&mut map, &mut frame.usage, &mut seen[5], "usage")?,
                FrameField::Error => read_once(&mut map, &mut frame.error, &mut seen[6], "error")?,
                FrameField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A frame's `delta`, read in place (see [`InPlace`]).
impl<'de> Fields<'de> for Delta {
    const WHAT: &'static str = "a delta object";

    #[inline]
    fn read<M: MapAccess<'de>>(&mut self, mut map: M) -> Result<(), M::Error> {
        let delta = self;
        let mut seen = [false; 6];
        while let Some(key) = map.next_key()? {
            match key {
                DeltaField::Type => read_once(&mut map, &mut delta.kind, &mut seen[0], "type")?,
                // One field: a delta carries one of the three.
                DeltaField::Text | DeltaField::Thinking | DeltaField::PartialJson => {
                    read_once(&mut map, &mut delta.text, &mut seen[1], "text")?
                }
                DeltaField::Signature => {
                    read_once(&mut map, &mut delta.signature, &mut seen[2], "signature")?
                }
                DeltaField::StopReason => read_once(
                    &mut map,
                    &mut delta.stop_reason,
                    &mut seen[3],
                    "stop_reason",
                )?,
                DeltaField::Container => {
                    read_once(&mut map, &mut delta.container, &mut seen[4], "container")?
                }
                DeltaField::Citation => {
                    read_once(&mut map, &mut delta.citation, &mut seen[5], "citation")?
                }
                DeltaField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}
