//! Reading one stream chunk (`chat.completion.chunk`) straight into the decoder: the first
//! choice with the stream's index is handed to [`ChoiceSink::choice`] as soon as its object
//! ends (`n` is never asked for), and only the chunk's other fields the decoder reads are kept.
//! Building the whole chunk as one struct first moved its 200 bytes through every level of
//! serde's return values, which cost about a fifth of a chunk's decoding (`benches/chunks.rs`).
//! Fields this client does not use (`id`, `model`, `created`, ...) are skipped without being
//! built.
//!
//! **Which choice is read.** The stream's choice is the one with index 0, as OpenAI numbers
//! it, unless the first chunk that offers any choice offers none with index 0 (some
//! OpenAI-compatible servers number their only choice 1): the stream is then read from the
//! index of that chunk's first choice, and that chunk is read again to give it to the
//! decoder (once a stream, so a chunk costs no more than with index 0: nothing is held while
//! the rest of the chunk is read). The first choice read fixes the index for the whole
//! stream, and choices with other indices are skipped, index 0 arriving later included: the
//! chosen choice's events have gone out by then, and another choice's would mix two answers.
//! Within a chunk, only the first choice with the stream's index is read.

use std::fmt;

use agent_core::ModelEvent;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::wire::{Delta, FunctionDelta, Text, ToolCallDelta, WireUsage};
use crate::json_keys::{Fields, InPlace, first, keys, object, read_once};

/// What a chunk holds besides its choices.
#[derive(Default)]
pub(super) struct ChunkRest {
    pub(super) usage: Option<Box<WireUsage>>,
    /// An error reported in the stream; only its presence is read here.
    pub(super) error: bool,
    /// Sources a search-backed model cites (Perplexity), kept as provider metadata.
    pub(super) citations: Option<Box<Value>>,
}

keys! {
    /// The keys of a chunk this client reads. Matched as identifiers (a one-byte enum made from
    /// the key's text) rather than read into a `Cow` string matched afterwards (`openai_model`
    /// in `benches/chunks.rs`: about 170 instructions per chunk, with [`ChoiceField`]).
    enum ChunkField {
        Choices = "choices",
        Usage = "usage",
        Error = "error",
        Citations = "citations",
    }
}

keys! {
    /// The keys of a choice this client reads.
    enum ChoiceField {
        Index = "index",
        Delta = "delta",
        FinishReason = "finish_reason",
        Logprobs = "logprobs",
    }
}

keys! {
    /// The keys of a delta this client reads.
    enum DeltaField {
        Content = "content",
        ReasoningContent = "reasoning_content",
        Reasoning = "reasoning",
        Refusal = "refusal",
        ToolCalls = "tool_calls",
    }
}

keys! {
    /// The keys of a tool call's delta this client reads.
    enum CallField {
        Index = "index",
        Id = "id",
        Function = "function",
    }
}

keys! {
    /// The keys of a tool call delta's `function`.
    enum FunctionField {
        Name = "name",
        Arguments = "arguments",
    }
}

/// A tool call's delta, read with its keys matched as a chunk's are (see [`keys!`]) instead of
/// through a derived `Deserialize`, whose field visitors and struct-or-sequence reading made a
/// streamed call's chunks run the most code of any chunk (`openai_call_model` in
/// `benches/chunks.rs`, `whole_turn_calls_agent` in `benches/stream.rs`).
impl<'de: 'a, 'a> Deserialize<'de> for ToolCallDelta<'a> {
    #[inline]
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        object::<_, ToolCallDelta<'de>>(deserializer)
    }
}

impl<'de> Fields<'de> for ToolCallDelta<'de> {
    const WHAT: &'static str = "a tool call delta object";

    #[inline]
    fn read<M: MapAccess<'de>>(&mut self, mut map: M) -> Result<(), M::Error> {
        let mut seen = [false; 3];
        while let Some(key) = map.next_key()? {
            match key {
                CallField::Index => read_once(&mut map, &mut self.index, &mut seen[0], "index")?,
                CallField::Id => read_once(&mut map, &mut self.id, &mut seen[1], "id")?,
                CallField::Function => {
                    read_once(&mut map, &mut self.function, &mut seen[2], "function")?
                }
                CallField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A call delta's `function`, read as [`ToolCallDelta`] is.
impl<'de: 'a, 'a> Deserialize<'de> for FunctionDelta<'a> {
    #[inline]
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        object::<_, FunctionDelta<'de>>(deserializer)
    }
}

impl<'de> Fields<'de> for FunctionDelta<'de> {
    const WHAT: &'static str = "a function delta object";

    #[inline]
    fn read<M: MapAccess<'de>>(&mut self, mut map: M) -> Result<(), M::Error> {
        let mut seen = [false; 2];
        while let Some(key) = map.next_key()? {
            match key {
                FunctionField::Name => read_once(&mut map, &mut self.name, &mut seen[0], "name")?,
                FunctionField::Arguments => {
                    read_once(&mut map, &mut self.arguments, &mut seen[1], "arguments")?
                }
                FunctionField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// Which choice of a stream is read (see the module doc), kept by the decoder for the whole
/// stream.
#[derive(Default)]
pub(super) struct StreamChoice {
    /// The index read: 0 until the stream's first chunk with choices offers none with it.
    index: u32,
    /// A choice was read, which fixes `index` for the rest of the stream.
    fixed: bool,
    /// The index of the first choice the chunk being read offers, while none was read.
    offered: Option<u32>,
}

/// Reads the chunk `data`, giving its choice with the stream's index to `decoder` and
/// returning the rest; a stream's first chunk with choices is read twice when none of them
/// has index 0 (see the module doc).
#[inline]
pub(super) fn read_chunk<C: ChoiceSink>(
    decoder: &mut C,
    data: &str,
    out: &mut Vec<ModelEvent>,
) -> Result<ChunkRest, serde_json::Error> {
    let read = read_whole(decoder, data, out);
    if decoder.stream_choice().offered.is_some() {
        return read_again(decoder, data, out, read);
    }
    read
}

/// The stream's first chunk with choices, read once and found to offer none with index 0:
/// read again, from the index of its first choice (`read` is the first reading's outcome).
#[cold]
#[inline(never)]
fn read_again<C: ChoiceSink>(
    decoder: &mut C,
    data: &str,
    out: &mut Vec<ModelEvent>,
    read: Result<ChunkRest, serde_json::Error>,
) -> Result<ChunkRest, serde_json::Error> {
    let stream = decoder.stream_choice();
    match stream.offered.take() {
        // Unless a choice with index 0 came after the others (it was read), or the chunk is
        // malformed.
        Some(index) if !stream.fixed && read.is_ok() => {
            stream.index = index;
            read_whole(decoder, data, out)
        }
        _ => read,
    }
}

/// One reading of the chunk `data`, to its end. Inlined even though `read_again` calls it
/// too: as a call of its own it cost a chunk about 80 instructions (`openai_call_agent` in
/// `benches/chunks.rs`).
#[inline(always)]
fn read_whole<C: ChoiceSink>(
    decoder: &mut C,
    data: &str,
    out: &mut Vec<ModelEvent>,
) -> Result<ChunkRest, serde_json::Error> {
    let mut json = serde_json::Deserializer::from_str(data);
    ChunkSeed { decoder, out }
        .deserialize(&mut json)
        .and_then(|rest| json.end().map(|()| rest))
}

/// What a chunk's first choice with the stream's index is given to, as soon as its object
/// ends: the decoder (`decode.rs`), which pushes the events it makes of it to `out`.
pub(super) trait ChoiceSink {
    /// Which choice of the stream is read.
    fn stream_choice(&mut self) -> &mut StreamChoice;

    /// Takes the choice: its delta, its finish reason and its log probabilities.
    fn choice(
        &mut self,
        delta: Option<&mut Delta<'_>>,
        finish: Option<Text<'_>>,
        logprobs: Option<Box<Value>>,
        out: &mut Vec<ModelEvent>,
    );
}

/// Reads a chunk, giving its choice with the stream's index to the decoder.
struct ChunkSeed<'d, C> {
    decoder: &'d mut C,
    out: &'d mut Vec<ModelEvent>,
}

impl<'de, C: ChoiceSink> DeserializeSeed<'de> for ChunkSeed<'_, C> {
    type Value = ChunkRest;

    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<ChunkRest, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, C: ChoiceSink> Visitor<'de> for ChunkSeed<'_, C> {
    type Value = ChunkRest;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a chat.completion.chunk object")
    }

    #[inline]
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<ChunkRest, M::Error> {
        let mut rest = ChunkRest::default();
        let mut chosen = false;
        // A key given twice is an error, as a derived `Deserialize` makes it: a second
        // `choices` or `usage` would otherwise replace or drop the first one's content.
        let mut seen = [false; 4];
        while let Some(key) = map.next_key()? {
            match key {
                ChunkField::Choices => {
                    first(&mut seen[0], "choices")?;
                    map.next_value_seed(ChoicesSeed {
                        decoder: &mut *self.decoder,
                        out: &mut *self.out,
                        chosen: &mut chosen,
                    })?
                }
                ChunkField::Usage => read_once(&mut map, &mut rest.usage, &mut seen[1], "usage")?,
                ChunkField::Error => {
                    first(&mut seen[2], "error")?;
                    rest.error = map.next_value::<Option<IgnoredAny>>()?.is_some();
                }
                ChunkField::Citations => {
                    read_once(&mut map, &mut rest.citations, &mut seen[3], "citations")?
                }
                ChunkField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(rest)
    }
}

/// Reads `choices` (an array, or `null`).
struct ChoicesSeed<'d, C> {
    decoder: &'d mut C,
    out: &'d mut Vec<ModelEvent>,
    /// Whether a choice of this chunk was given to the decoder already.
    chosen: &'d mut bool,
}

impl<'de, C: ChoiceSink> DeserializeSeed<'de> for ChoicesSeed<'_, C> {
    type Value = ();

    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de, C: ChoiceSink> Visitor<'de> for ChoicesSeed<'_, C> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of choices")
    }

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
        deserializer.deserialize_seq(self)
    }

    #[inline]
    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
        while seq
            .next_element_seed(ChoiceSeed {
                decoder: &mut *self.decoder,
                out: &mut *self.out,
                chosen: &mut *self.chosen,
            })?
            .is_some()
        {}
        Ok(())
    }
}

/// Reads one choice, and gives it to the decoder if it is the chunk's first with the stream's
/// index.
struct ChoiceSeed<'d, C> {
    decoder: &'d mut C,
    out: &'d mut Vec<ModelEvent>,
    chosen: &'d mut bool,
}

impl<'de, C: ChoiceSink> DeserializeSeed<'de> for ChoiceSeed<'_, C> {
    type Value = ();

    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, C: ChoiceSink> Visitor<'de> for ChoiceSeed<'_, C> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a choice object")
    }

    #[inline]
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let mut index = 0u32;
        // Read in place (see `InPlace`).
        let mut delta: Option<Delta<'de>> = None;
        let mut finish: Option<Text<'de>> = None;
        let mut logprobs: Option<Box<Value>> = None;
        // A key given twice is an error (see `ChunkSeed`): a second `delta` would replace the
        // first one's text.
        let mut seen = [false; 4];
        while let Some(key) = map.next_key()? {
            match key {
                ChoiceField::Index => {
                    first(&mut seen[0], "index")?;
                    index = map.next_value()?;
                }
                ChoiceField::Delta => {
                    first(&mut seen[1], "delta")?;
                    map.next_value_seed(InPlace(&mut delta))?;
                }
                ChoiceField::FinishReason => {
                    read_once(&mut map, &mut finish, &mut seen[2], "finish_reason")?
                }
                ChoiceField::Logprobs => {
                    read_once(&mut map, &mut logprobs, &mut seen[3], "logprobs")?
                }
                ChoiceField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let stream = self.decoder.stream_choice();
        if index == stream.index && !*self.chosen {
            stream.fixed = true;
            *self.chosen = true;
            self.decoder
                .choice(delta.as_mut(), finish, logprobs, self.out);
        } else if !stream.fixed && stream.offered.is_none() {
            stream.offered = Some(index);
        }
        Ok(())
    }
}

/// A choice's `delta`, read in place (see [`InPlace`]; a tool call's delta is held inline, see
/// `ToolCallDeltas`). As a derived `Deserialize` did, a field given twice is an error.
impl<'de> Fields<'de> for Delta<'de> {
    const WHAT: &'static str = "a delta object";

    #[inline]
    fn read<M: MapAccess<'de>>(&mut self, mut map: M) -> Result<(), M::Error> {
        let delta = self;
        let mut seen = [false; 5];
        while let Some(key) = map.next_key()? {
            match key {
                DeltaField::Content => {
                    read_once(&mut map, &mut delta.content, &mut seen[0], "content")?
                }
                DeltaField::ReasoningContent => read_once(
                    &mut map,
                    &mut delta.reasoning_content,
                    &mut seen[1],
                    "reasoning_content",
                )?,
                DeltaField::Reasoning => {
                    read_once(&mut map, &mut delta.reasoning, &mut seen[2], "reasoning")?
                }
                DeltaField::Refusal => {
                    read_once(&mut map, &mut delta.refusal, &mut seen[3], "refusal")?
                }
                DeltaField::ToolCalls => {
                    read_once(&mut map, &mut delta.tool_calls, &mut seen[4], "tool_calls")?
                }
                DeltaField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}
