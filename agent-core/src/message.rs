//! Conversation messages: what the model reads and what a store keeps.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::text::Text;

/// One message of a conversation, in the provider-neutral form the engine keeps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// A system instruction.
    System {
        /// The instruction text.
        content: Text,
    },
    /// A user's input.
    User {
        /// The input text.
        content: Text,
    },
    /// A model reply: text, reasoning and the tool calls it asked for.
    Assistant {
        /// The visible text.
        content: Text,
        /// Reasoning the model streamed, if any.
        #[serde(default, skip_serializing_if = "str::is_empty")]
        reasoning: Text,
        /// The tool calls of this reply, in the model's order. Shared: the stored row, the
        /// history, the turn's added messages and the step's record hold one list, and a copy
        /// of the message copies a pointer (`whole_turn_calls_agent` in
        /// `agent-providers/benches/stream.rs`). Build it from a `Vec` with `.into()`;
        /// `Arc::default()` is an empty list that allocates nothing.
        #[serde(default, skip_serializing_if = "<[ToolCall]>::is_empty")]
        tool_calls: Arc<[ToolCall]>,
        /// The provider's signature over the reasoning (Anthropic's thinking blocks), which it
        /// needs to take the reasoning back in a later request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning_signature: Option<String>,
        /// Blocks of the reply that have no provider-neutral form but that the provider needs
        /// back in a later request, as it sent them (Anthropic's server-tool uses and results:
        /// web search, code execution, ...). Empty for most replies; other providers ignore it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        provider_blocks: Vec<serde_json::Value>,
    },
    /// The result of one tool call, as the model reads it.
    Tool {
        /// The id of the call this answers.
        call_id: Text,
        /// The tool's name.
        name: Text,
        /// The result (JSON text for structured outputs, or an error message).
        content: Text,
        /// Whether the call failed.
        is_error: bool,
    },
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<Text>) -> Self {
        Message::User {
            content: content.into(),
        }
    }

    /// A system message.
    pub fn system(content: impl Into<Text>) -> Self {
        Message::System {
            content: content.into(),
        }
    }

    /// An assistant message holding only text.
    pub fn assistant(content: impl Into<Text>) -> Self {
        Message::Assistant {
            content: content.into(),
            reasoning: Text::new(),
            tool_calls: Arc::default(),
            reasoning_signature: None,
            provider_blocks: Vec::new(),
        }
    }

    /// The role name: `system`, `user`, `assistant` or `tool`.
    pub fn role(&self) -> &'static str {
        match self {
            Message::System { .. } => "system",
            Message::User { .. } => "user",
            Message::Assistant { .. } => "assistant",
            Message::Tool { .. } => "tool",
        }
    }

    /// The message's text content.
    pub fn text(&self) -> &str {
        match self {
            Message::System { content }
            | Message::User { content }
            | Message::Assistant { content, .. }
            | Message::Tool { content, .. } => content,
        }
    }
}

/// A tool call as the model emitted it: raw JSON arguments, not yet validated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for this call.
    pub id: Text,
    /// The name of the tool the model asked for.
    pub name: Text,
    /// The arguments as the model sent them (JSON text, possibly invalid).
    pub arguments: Text,
    /// What the provider said about the call beyond its name and arguments, for hooks to read
    /// (for example Anthropic's `caller`, `{"caller": {"type": "code_execution_20250825", ...}}`,
    /// when a server tool called this client tool). `None` for most calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
}

/// Calls made shared, as a message holds them; no calls share the empty list, which allocates
/// nothing (`Arc::from` an empty `Vec` allocates, `Arc::default` does not).
pub(crate) fn shared_calls(calls: Vec<ToolCall>) -> Arc<[ToolCall]> {
    if calls.is_empty() {
        Arc::default()
    } else {
        calls.into()
    }
}

impl ToolCall {
    /// A call with no provider metadata.
    pub fn new(id: impl Into<Text>, name: impl Into<Text>, arguments: impl Into<Text>) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            metadata: None,
        }
    }
}

/// Whether a tool call's raw arguments are none: empty or only whitespace (of any kind `trim`
/// takes away), which the engine reads as `{}`. Tools parsing a call's arguments and providers
/// sending a call back read them through this one rule. It stops at the first character that is
/// not whitespace (an arguments object's `{`) instead of `trim`'s two-ended scan: about 50
/// instructions a call (the slope of `whole_turn_calls_agent` in
/// agent-providers/benches/stream.rs).
pub fn no_arguments(raw: &str) -> bool {
    raw.chars().all(char::is_whitespace)
}

/// `messages` with every tool call paired with exactly one result, pairing within a step: an
/// assistant message's calls are answered by the tool results right after it, by id (ids are
/// only unique within a step: providers reuse `call_0` in every reply). A call without a
/// result is taken out of its assistant message (the message goes when nothing is left of
/// it), and a result that answers no call of its step is left out. A valid history is
/// returned unchanged.
pub(crate) fn paired(messages: Vec<Message>) -> Vec<Message> {
    if is_paired(&messages) {
        return messages;
    }
    let mut out = Vec::with_capacity(messages.len());
    let mut messages = messages.into_iter().peekable();
    while let Some(message) = messages.next() {
        let Message::Assistant {
            content,
            reasoning,
            tool_calls,
            reasoning_signature,
            provider_blocks,
        } = message
        else {
            // A result outside any step's window answers nothing.
            if !matches!(message, Message::Tool { .. }) {
                out.push(message);
            }
            continue;
        };
        let mut results = Vec::new();
        while let Some(Message::Tool { .. }) = messages.peek() {
            results.extend(messages.next());
        }
        let mut kept_results = Vec::with_capacity(results.len());
        let mut kept_calls = Vec::with_capacity(tool_calls.len());
        for call in tool_calls.iter() {
            let answer = results.iter().position(
                |result| matches!(result, Message::Tool { call_id, .. } if *call_id == call.id),
            );
            if let Some(at) = answer {
                kept_results.push(results.remove(at));
                kept_calls.push(call.clone());
            }
        }
        if !(content.is_empty() && kept_calls.is_empty() && provider_blocks.is_empty()) {
            out.push(Message::Assistant {
                content,
                reasoning,
                tool_calls: shared_calls(kept_calls),
                reasoning_signature,
                provider_blocks,
            });
        }
        out.extend(kept_results);
    }
    out
}

/// Whether `messages` are paired, as a model must read them: each assistant message's tool
/// calls answered by the tool results right after it, each call by exactly one (by id, within
/// its step), and no result outside a step's results. A store that lends only paired
/// histories says so with [`SessionStore::lends_paired`](crate::SessionStore::lends_paired).
pub fn is_paired(messages: &[Message]) -> bool {
    let mut at = 0;
    while at < messages.len() {
        match &messages[at] {
            Message::Assistant { tool_calls, .. } => {
                let start = at + 1;
                let mut end = start;
                while matches!(messages.get(end), Some(Message::Tool { .. })) {
                    end += 1;
                }
                if !answers_each_once(tool_calls, &messages[start..end]) {
                    return false;
                }
                at = end;
            }
            Message::Tool { .. } => return false,
            _ => at += 1,
        }
    }
    true
}

/// Whether `results` answer `calls` one to one, by id. Each result takes the first call of its
/// id not yet answered. Marks on the stack for a step of up to 64 calls: a lent history is
/// checked whole at each turn's start, and a vector of ids per step with calls was an
/// allocation each (`whole_turn_conversation_agent` in agent-providers/benches/stream.rs).
fn answers_each_once(calls: &[ToolCall], results: &[Message]) -> bool {
    const ON_STACK: usize = 64;
    if calls.len() != results.len() {
        return false;
    }
    let mut on_stack = [false; ON_STACK];
    let mut wide = Vec::new();
    let answered: &mut [bool] = if calls.len() <= ON_STACK {
        &mut on_stack[..calls.len()]
    } else {
        wide.resize(calls.len(), false);
        &mut wide
    };
    results.iter().all(|result| {
        let Message::Tool { call_id, .. } = result else {
            return false;
        };
        let first = calls
            .iter()
            .zip(answered.iter_mut())
            .find(|(call, answered)| !**answered && call.id.as_str() == call_id.as_str());
        first.map(|(_, answered)| *answered = true).is_some()
    })
}

#[cfg(test)]
mod tests {
    use super::{Message, ToolCall, is_paired, no_arguments};

    fn calls(ids: &[&str]) -> Message {
        Message::Assistant {
            content: "".into(),
            reasoning: "".into(),
            tool_calls: ids.iter().map(|id| ToolCall::new(*id, "t", "{}")).collect(),
            reasoning_signature: None,
            provider_blocks: Vec::new(),
        }
    }

    fn result(id: &str) -> Message {
        Message::Tool {
            call_id: id.into(),
            name: "t".into(),
            content: "ok".into(),
            is_error: false,
        }
    }

    /// A step is paired when its results answer its calls one to one, in any order, a repeated
    /// id answered as often as it was called; on the stack or, past 64 calls, in a vector.
    #[test]
    fn results_pair_with_calls_one_to_one_however_many() {
        let paired = |ids: &[&str], answers: &[&str]| {
            let mut messages = vec![Message::user("go"), calls(ids)];
            messages.extend(answers.iter().map(|id| result(id)));
            messages.push(Message::assistant("done"));
            is_paired(&messages)
        };
        assert!(paired(&["a", "b"], &["b", "a"]));
        assert!(paired(&["a", "a"], &["a", "a"]));
        assert!(!paired(&["a", "b"], &["a", "a"]));
        assert!(!paired(&["a", "b"], &["a", "c"]));
        assert!(!paired(&["a", "b"], &["a"]));
        assert!(!paired(&["a"], &["a", "a"]));
        for n in [64, 65, 200] {
            let ids: Vec<String> = (0..n).map(|i| format!("call_{i}")).collect();
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let reversed: Vec<&str> = ids.iter().rev().copied().collect();
            assert!(paired(&ids, &reversed), "{n}");
            let mut twice = reversed.clone();
            twice[0] = twice[1];
            assert!(!paired(&ids, &twice), "{n}");
        }
        // A result outside a step with calls answers nothing.
        assert!(!is_paired(&[Message::user("go"), result("a")]));
    }

    /// Arguments that are only whitespace (of any kind `trim` takes away) are no arguments;
    /// anything else is parsed as it is.
    #[test]
    fn only_whitespace_is_no_arguments() {
        for raw in ["", " ", "\n\t ", "\u{a0}\u{2003}"] {
            assert!(no_arguments(raw), "{raw:?}");
            assert_eq!(no_arguments(raw), raw.trim().is_empty());
        }
        for raw in ["{}", " {} ", "x", " \u{a0}0"] {
            assert!(!no_arguments(raw), "{raw:?}");
            assert_eq!(no_arguments(raw), raw.trim().is_empty());
        }
    }
}
