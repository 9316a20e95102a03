//! The request side of the Messages API: serde types that borrow from the [`ModelRequest`], and
//! the mapping of the core's conversation onto Anthropic's content blocks.

use std::borrow::Cow;
use std::sync::Arc;

use agent_core::{
    Message, ModelError, ModelErrorKind, ModelRequest, OutputSchema, ToolCall, ToolChoice,
};
use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, SerializeStruct, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::tools_json::{ToolsJson, Written};

/// The body of `POST /v1/messages`. Provider options are merged into its top level and win
/// over the fields built here, except `stream`, which is always `true`.
pub(super) struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    system: Option<Cow<'a, str>>,
    messages: Conversation<'a>,
    tools: Tools<'a>,
    tool_choice: Option<WireToolChoice<'a>>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    stop_sequences: Option<&'a [String]>,
    options: &'a Map<String, Value>,
}

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let options = self.options;
        let mut map = serializer.serialize_map(None)?;
        entry(&mut map, options, "model", self.model)?;
        entry(&mut map, options, "max_tokens", &self.max_tokens)?;
        if let Some(system) = &self.system {
            entry(&mut map, options, "system", system)?;
        }
        entry(&mut map, options, "messages", &self.messages)?;
        match &self.tools {
            Tools::Written(written) => entry(&mut map, options, "tools", &*written.json)?,
            Tools::Listed(tools) if !tools.is_empty() => entry(&mut map, options, "tools", tools)?,
            Tools::Listed(_) => {}
        }
        if let Some(choice) = &self.tool_choice {
            entry(&mut map, options, "tool_choice", choice)?;
        }
        if let Some(temperature) = &self.temperature {
            entry(&mut map, options, "temperature", temperature)?;
        }
        if let Some(top_p) = &self.top_p {
            entry(&mut map, options, "top_p", top_p)?;
        }
        if let Some(stop) = &self.stop_sequences {
            entry(&mut map, options, "stop_sequences", stop)?;
        }
        map.serialize_entry("stream", &true)?;
        for (key, value) in options.iter().filter(|(key, _)| key.as_str() != "stream") {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Writes a field of the body, unless a provider option of that name replaces it.
fn entry<M: SerializeMap, T: Serialize + ?Sized>(
    map: &mut M,
    options: &Map<String, Value>,
    key: &str,
    value: &T,
) -> Result<(), M::Error> {
    if options.contains_key(key) {
        Ok(())
    } else {
        map.serialize_entry(key, value)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Role {
    User,
    Assistant,
}

/// A content block of a message, one struct per kind, each written with its `type` first. Not
/// one enum: its `match` compiled to a jump table whose target changes from block to block,
/// mispredicted for most blocks of a long history (`anthropic_history` in benches/chunks.rs).
#[derive(Serialize)]
struct TextBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

/// Earlier reasoning sent back with its signature.
#[derive(Serialize)]
struct ThinkingBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    thinking: &'a str,
    signature: &'a str,
}

/// A tool call.
#[derive(Serialize)]
struct ToolUseBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: &'a str,
    name: &'a str,
    input: Input<'a>,
}

/// A tool's result.
#[derive(Serialize)]
struct ToolResultBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    tool_use_id: &'a str,
    content: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    is_error: bool,
}

/// The tools offered to the model.
enum Tools<'a> {
    /// The request's tools, as the client last wrote them (a request without a structured
    /// answer's tool).
    Written(Arc<Written>),
    /// Tools listed for this request alone.
    Listed(Vec<WireTool<'a>>),
}

/// A tool offered to the model.
#[derive(Serialize)]
pub(super) struct WireTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    description: &'a str,
    input_schema: Schema<'a>,
}

/// A canonical JSON Schema as Anthropic takes it: unchanged but for `$schema`, which is
/// dropped while serializing (no copy of the schema is made).
struct Schema<'a>(&'a Value);

impl Serialize for Schema<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(object) => {
                let mut map = serializer.serialize_map(None)?;
                for (key, value) in object.iter().filter(|(key, _)| key.as_str() != "$schema") {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// How the model may choose tools.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireToolChoice<'a> {
    Auto,
    Any,
    None,
    Tool { name: &'a str },
}

/// The description of the tool that carries a structured answer.
const ANSWER_TOOL_DESCRIPTION: &str = "Gives the final answer: this tool's input is the answer.";

/// Builds the request body of one call.
///
/// `model` and `max_tokens` are the values to use when the request leaves them open. A
/// structured answer ([`ModelRequest::output_schema`]) is asked for through a tool named after
/// the schema: forced (`{"type": "tool"}`) when the model may call no other tool, else the model
/// must call some tool (`{"type": "any"}`), so that it can still use tools before it answers.
/// With extended thinking on (a `thinking` provider option), which forbids forcing tools, the
/// choice stays `auto`, and so does a required tool call.
pub(super) fn body<'a>(
    request: &'a ModelRequest,
    model: &'a str,
    max_tokens: u32,
    written: &ToolsJson,
) -> Result<Body<'a>, ModelError> {
    let settings = &request.settings;
    if settings.seed.is_some() {
        tracing::debug!(
            provider = "anthropic",
            "the Messages API has no seed: the setting is ignored"
        );
    }
    let answer = request.output_schema.as_ref();
    let listed = || -> Vec<WireTool<'a>> {
        request
            .tools
            .iter()
            .map(|tool| WireTool {
                name: &tool.name,
                description: &tool.description,
                input_schema: Schema(&tool.parameters),
            })
            .collect()
    };
    let (tools, tool_choice) = match answer {
        Some(answer) => {
            let mut tools = listed();
            let choice = answer_choice(answer, request, &mut tools)?;
            (Tools::Listed(tools), Some(choice))
        }
        None if request.tools.is_empty() => (Tools::Listed(Vec::new()), None),
        None => {
            let write = || serde_json::value::to_raw_value(&listed()).map_err(encode_error);
            let tools = written.get(&request.tools, false, write)?;
            let choice = choice(&request.tool_choice, thinking_enabled(request));
            (Tools::Written(tools), Some(choice))
        }
    };
    Ok(Body {
        model: if request.model.is_empty() {
            model
        } else {
            &request.model
        },
        max_tokens: settings.max_output_tokens.unwrap_or(max_tokens),
        system: system(request),
        messages: Conversation {
            messages: &request.messages,
            with_thinking: request.send_reasoning || thinking_enabled(request),
        },
        tools,
        tool_choice,
        temperature: settings.temperature,
        top_p: settings.top_p,
        stop_sequences: settings.stop_sequences.as_deref(),
        options: &request.provider_options,
    })
}

/// A body that cannot be written as JSON.
pub(super) fn encode_error(error: serde_json::Error) -> ModelError {
    ModelError::new(
        ModelErrorKind::BadRequest,
        format!("anthropic: cannot encode the request: {error}"),
    )
}

/// Whether the request turns extended thinking on (a `thinking` provider option).
fn thinking_enabled(request: &ModelRequest) -> bool {
    request
        .provider_options
        .get("thinking")
        .and_then(|thinking| thinking.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|kind| kind != "disabled")
}

/// The tool choice as the Messages API spells it. Extended thinking forbids forcing a tool
/// call with `any`, so with it on a required call is left to the model (`auto`): the typed
/// output's final-answer tool mode, which requires one, then sends a text reply back.
fn choice(choice: &ToolChoice, thinking: bool) -> WireToolChoice<'_> {
    match choice {
        ToolChoice::Auto => WireToolChoice::Auto,
        ToolChoice::None => WireToolChoice::None,
        ToolChoice::Required if thinking => WireToolChoice::Auto,
        ToolChoice::Required => WireToolChoice::Any,
        ToolChoice::Tool(name) => WireToolChoice::Tool { name },
    }
}

/// Adds the answer tool and picks the tool choice that makes the model use it.
fn answer_choice<'a>(
    answer: &'a OutputSchema,
    request: &'a ModelRequest,
    tools: &mut Vec<WireTool<'a>>,
) -> Result<WireToolChoice<'a>, ModelError> {
    if tools.iter().any(|tool| tool.name == answer.name) {
        return Err(ModelError::new(
            ModelErrorKind::BadRequest,
            format!(
                "anthropic: the output schema `{}` has the name of a tool",
                answer.name
            ),
        ));
    }
    let thinking = thinking_enabled(request);
    let choice = match &request.tool_choice {
        ToolChoice::Tool(name) => WireToolChoice::Tool { name },
        _ if thinking => WireToolChoice::Auto,
        // Other tools stay listed (earlier messages may use them), but cannot be called.
        ToolChoice::None => WireToolChoice::Tool { name: &answer.name },
        _ if tools.is_empty() => WireToolChoice::Tool { name: &answer.name },
        ToolChoice::Auto | ToolChoice::Required => WireToolChoice::Any,
    };
    tools.push(WireTool {
        name: &answer.name,
        description: ANSWER_TOOL_DESCRIPTION,
        input_schema: Schema(&answer.schema),
    });
    Ok(choice)
}

/// The top-level system prompt: the request's, then any system messages, blank-line separated.
/// Empty ones are left out, as the OpenAI wire leaves out an empty system prompt: an
/// `instructions("")` adds nothing to send.
fn system(request: &ModelRequest) -> Option<Cow<'_, str>> {
    let mut parts = request
        .system
        .iter()
        .map(String::as_str)
        .chain(request.messages.iter().filter_map(|message| match message {
            Message::System { content } => Some(content.as_str()),
            _ => None,
        }))
        .filter(|part| !part.is_empty());
    let first = parts.next()?;
    let Some(second) = parts.next() else {
        return Some(Cow::Borrowed(first));
    };
    let mut joined = format!("{first}\n\n{second}");
    for part in parts {
        joined.push_str("\n\n");
        joined.push_str(part);
    }
    Some(Cow::Owned(joined))
}

/// The conversation as Anthropic messages, written straight from the core's: no vector of
/// blocks for each message, nor a JSON tree for each tool call's input (a long history is
/// written for every call: `anthropic_history` in agent-providers/benches/chunks.rs). Tool
/// results go back in a user message as `tool_result` blocks; consecutive messages of one role
/// (several tool results, a user message after them) are merged into one message, as the API
/// wants roles to alternate.
///
/// Earlier reasoning goes back as a `thinking` block when it was streamed with a signature and
/// `with_thinking` holds (thinking is on, or the turn sends reasoning): with thinking on, the
/// API wants the signed block before a `tool_use` it answers.
pub(super) struct Conversation<'a> {
    messages: &'a [Message],
    with_thinking: bool,
}

impl Serialize for Conversation<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        let with_thinking = self.with_thinking;
        let mut rest = self.messages;
        let first = rest
            .iter()
            .find_map(|message| role_of(message, with_thinking));
        if first == Some(Role::Assistant) {
            seq.serialize_element(&serde_json::json!({
                "role": Role::User,
                "content": [{"type": "text", "text": OPENING}],
            }))?;
        }
        // Each message of one role holds the core's messages up to the next one of the other
        // role (those that send nothing, a system message or an empty reply, go with either).
        while let Some((start, role)) = rest
            .iter()
            .enumerate()
            .find_map(|(at, message)| role_of(message, with_thinking).map(|role| (at, role)))
        {
            let other = |message: &Message| {
                role_of(message, with_thinking).is_some_and(|other| other != role)
            };
            let end = rest[start..]
                .iter()
                .position(other)
                .map_or(rest.len(), |at| start + at);
            seq.serialize_element(&WireMessage {
                role,
                messages: &rest[start..end],
                with_thinking,
            })?;
            rest = &rest[end..];
        }
        seq.end()
    }
}

/// The user message sent first when the conversation would open with an assistant message, as
/// after a compaction that kept the tail of a tool loop (the summary goes in the system prompt)
/// or a hook that trimmed the history: the Messages API refuses a conversation whose first
/// message is not the user's (`first message must use the "user" role`).
const OPENING: &str = "(Earlier messages are left out.)";

/// The role of the message that carries `message`'s blocks; `None` when it sends none (a
/// system message, an empty reply). Two tests of the message's kind, not a `match` over its
/// four (see [`Blocks`]).
fn role_of(message: &Message, with_thinking: bool) -> Option<Role> {
    if let Some(reply) = Reply::of(message, with_thinking) {
        return (!reply.is_empty()).then_some(Role::Assistant);
    }
    (!matches!(message, Message::System { .. })).then_some(Role::User)
}

/// What an assistant message sends, in its blocks' order: its earlier reasoning and signature,
/// as a `thinking` block, when it was streamed with a signature and `with_thinking` holds; the
/// server-tool blocks as they came, before the text that draws on them; its text, unless
/// empty or whitespace alone; its tool calls. One reading for [`role_of`] and [`Blocks`], so that a message is
/// left out exactly when it would have no blocks.
struct Reply<'a> {
    thinking: Option<(&'a str, &'a str)>,
    raw: &'a [Value],
    text: Option<&'a str>,
    calls: &'a [ToolCall],
}

impl<'a> Reply<'a> {
    /// The parts `message` sends, if it is an assistant message.
    fn of(message: &'a Message, with_thinking: bool) -> Option<Self> {
        let Message::Assistant {
            content,
            reasoning,
            tool_calls,
            reasoning_signature,
            provider_blocks,
        } = message
        else {
            return None;
        };
        let thinking = reasoning_signature
            .as_deref()
            .filter(|_| with_thinking && !reasoning.is_empty())
            .map(|signature| (reasoning.as_str(), signature));
        Some(Reply {
            thinking,
            raw: provider_blocks,
            // The API refuses a text block of whitespace alone ("text content blocks must
            // contain non-whitespace text"), which a model may stream before its tool calls.
            text: (!content.chars().all(char::is_whitespace)).then_some(content.as_str()),
            calls: tool_calls,
        })
    }

    fn is_empty(&self) -> bool {
        self.thinking.is_none()
            && self.raw.is_empty()
            && self.text.is_none()
            && self.calls.is_empty()
    }
}

/// One Anthropic message: the blocks of consecutive core messages of one role.
struct WireMessage<'a> {
    role: Role,
    messages: &'a [Message],
    with_thinking: bool,
}

impl Serialize for WireMessage<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut message = serializer.serialize_struct("Message", 2)?;
        message.serialize_field("role", &self.role)?;
        message.serialize_field(
            "content",
            &Blocks {
                messages: self.messages,
                with_thinking: self.with_thinking,
            },
        )?;
        message.end()
    }
}

/// The content blocks of consecutive core messages, in order: an assistant message's [`Reply`],
/// a user message's text, a tool result's `tool_result` block, a system message nothing (it
/// goes in the top-level system prompt).
///
/// A message's kind is told apart by tests in turn (an assistant message? a tool result? a
/// user message?) rather than one `match` over its four kinds, which compiled to a jump table
/// whose target changes from message to message: about two mispredicted jumps a message here
/// and in [`role_of`] (`anthropic_history` in benches/chunks.rs).
struct Blocks<'a> {
    messages: &'a [Message],
    with_thinking: bool,
}

impl Serialize for Blocks<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for message in self.messages {
            if let Some(reply) = Reply::of(message, self.with_thinking) {
                if let Some((thinking, signature)) = reply.thinking {
                    seq.serialize_element(&ThinkingBlock {
                        kind: "thinking",
                        thinking,
                        signature,
                    })?;
                }
                for block in reply.raw {
                    seq.serialize_element(block)?;
                }
                if let Some(text) = reply.text {
                    seq.serialize_element(&TextBlock { kind: "text", text })?;
                }
                for call in reply.calls {
                    seq.serialize_element(&ToolUseBlock {
                        kind: "tool_use",
                        id: &call.id,
                        name: &call.name,
                        input: Input::of(&call.arguments),
                    })?;
                }
            } else if let Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } = message
            {
                seq.serialize_element(&ToolResultBlock {
                    kind: "tool_result",
                    tool_use_id: call_id,
                    content,
                    is_error: *is_error,
                })?;
            } else if let Message::User { content } = message {
                seq.serialize_element(&TextBlock {
                    kind: "text",
                    text: content,
                })?;
            }
        }
        seq.end()
    }
}

/// A stored tool call's arguments as a `tool_use` input: the JSON object they hold, as the model
/// wrote it, or `{}` when they are not one (a model may have streamed invalid JSON).
enum Input<'a> {
    /// The arguments, a JSON object.
    Object(&'a RawValue),
    /// No usable arguments.
    Empty,
}

impl<'a> Input<'a> {
    fn of(arguments: &'a str) -> Self {
        match serde_json::from_str::<&RawValue>(arguments) {
            Ok(raw) if raw.get().starts_with('{') => Input::Object(raw),
            _ => Input::Empty,
        }
    }
}

impl Serialize for Input<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Input::Object(raw) => raw.serialize(serializer),
            Input::Empty => serializer.serialize_map(Some(0))?.end(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_system_texts_are_left_out() {
        let mut request = ModelRequest::default();
        request.system = Some(String::new());
        assert_eq!(system(&request), None);
        request.messages = vec![Message::system(""), Message::system("Be brief.")].into();
        assert_eq!(system(&request).as_deref(), Some("Be brief."));
        request.system = Some("You add.".to_owned());
        assert_eq!(system(&request).as_deref(), Some("You add.\n\nBe brief."));
    }

    #[test]
    fn a_conversation_that_opens_with_the_assistant_gets_a_user_message_first() {
        let call = ToolCall {
            id: "c1".into(),
            name: "t".into(),
            arguments: "{}".into(),
            metadata: None,
        };
        let messages = [
            Message::system("Summary of the earlier conversation:\nS"),
            Message::Assistant {
                content: Default::default(),
                reasoning: Default::default(),
                tool_calls: vec![call].into(),
                reasoning_signature: None,
                provider_blocks: Vec::new(),
            },
            Message::Tool {
                call_id: "c1".into(),
                name: "t".into(),
                content: "ok".into(),
                is_error: false,
            },
        ];
        let written = |messages: &[Message]| {
            serde_json::to_value(Conversation {
                messages,
                with_thinking: false,
            })
            .unwrap()
        };
        assert_eq!(
            written(&messages),
            serde_json::json!([
                {"role": "user", "content": [{"type": "text", "text": OPENING}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "c1", "name": "t", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "ok"}
                ]}
            ])
        );
        // One that opens with the user's message is sent as it is.
        assert_eq!(
            written(&[Message::user("hi")]),
            serde_json::json!([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
        );
    }

    /// A reply of whitespace alone (a model may stream a newline before its calls) sends no
    /// text block, which the API refuses; one with nothing else is left out, and the user's
    /// messages around it merge into one.
    #[test]
    fn whitespace_alone_sends_no_text_block() {
        let call = ToolCall {
            id: "c1".into(),
            name: "t".into(),
            arguments: "{}".into(),
            metadata: None,
        };
        let mut with_call = Message::assistant("\n\n");
        if let Message::Assistant { tool_calls, .. } = &mut with_call {
            *tool_calls = vec![call].into();
        }
        let messages = [
            Message::user("hi"),
            with_call,
            Message::Tool {
                call_id: "c1".into(),
                name: "t".into(),
                content: "ok".into(),
                is_error: false,
            },
            Message::assistant(" \t\n"),
            Message::user("and?"),
        ];
        let written = serde_json::to_value(Conversation {
            messages: &messages,
            with_thinking: false,
        })
        .unwrap();
        assert_eq!(
            written,
            serde_json::json!([
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "c1", "name": "t", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "ok"},
                    {"type": "text", "text": "and?"}
                ]}
            ])
        );
    }
}
