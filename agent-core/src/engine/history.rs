//! The hooks that transform what the model reads and what the turn stores: filter_messages
//! (the loaded rows), prefilter_llm_history (each request's messages), post_process_message
//! (the model's reply), before_store_tool_result (each tool result), and how a dropped tool
//! call is taken out of its assistant message.

use std::collections::HashSet;
use std::sync::Arc;

use super::state::{End, Turn, as_stored};
use crate::hooks::chain;
use crate::hooks::{
    FilterMessagesContext, HistoryDecision, LlmHistoryContext, PostProcessContext, RunAgent,
    StopReason, StoreToolResultContext, ToolResultRecord, TurnError, TurnHooks,
};
use crate::message::{self, Message, ToolCall};
use crate::store::{MessageUpdate, StoredMessage};
use crate::text::Text;

/// filter_messages: the rows the turn reads its history from (never written back).
pub(crate) async fn filter_rows(
    hooks: &TurnHooks,
    frame: &Arc<RunAgent>,
    session_id: &Arc<str>,
    rows: Vec<StoredMessage>,
) -> Result<Vec<StoredMessage>, TurnError> {
    if hooks.filter_messages.is_empty() {
        return Ok(rows);
    }
    let mut ctx = FilterMessagesContext {
        agent: frame.clone(),
        request_id: frame.request_id.clone(),
        session_id: session_id.clone(),
        rows,
    };
    chain(&hooks.filter_messages, &mut ctx, |ctx, out| {
        if let Some(rows) = out {
            ctx.rows = rows;
        }
        true
    })
    .await?;
    Ok(ctx.rows)
}

/// Messages a hook gave the model to read (before_turn's or before_step's `messages`,
/// prefilter_llm_history's `Replace`), paired as the history is ([`message::paired`]): a tool
/// call without its result is taken out, and a result that answers no call left out, with a
/// warning. Sent as given, the provider would refuse the request ("tool_calls must be followed
/// by tool messages") and the turn fail on a hook's slip. A paired list is returned as it is.
pub(crate) fn paired_from_hook(event: &'static str, messages: Vec<Message>) -> Vec<Message> {
    if message::is_paired(&messages) {
        return messages;
    }
    tracing::warn!(
        hook.event = event,
        "a hook's messages hold a tool call without its result, or a result without its call: \
         they are left out of what the model reads"
    );
    message::paired(messages)
}

/// What prefilter_llm_history left of a request's messages.
pub(crate) enum Prefiltered {
    /// Send these.
    Send(Arc<Vec<Message>>),
    /// Do not call the model: end the turn with this assistant message.
    Block(Message),
}

/// prefilter_llm_history: the messages to send, or the message that blocks the call. Called
/// only when there are such hooks (a step without them makes no future for it).
pub(crate) async fn prefilter(
    hooks: &TurnHooks,
    agent: &Arc<RunAgent>,
    step: usize,
    messages: Arc<Vec<Message>>,
) -> Result<Prefiltered, TurnError> {
    let mut ctx = LlmHistoryContext {
        agent: agent.clone(),
        request_id: agent.request_id.clone(),
        step,
        messages,
    };
    let mut block = None;
    chain(
        &hooks.prefilter_llm_history,
        &mut ctx,
        |ctx, out| match out {
            HistoryDecision::Keep => true,
            HistoryDecision::Replace(messages) => {
                let messages = paired_from_hook("prefilter_llm_history", messages);
                ctx.messages = Arc::new(messages);
                true
            }
            HistoryDecision::Block(message) => {
                block = Some(message);
                false
            }
        },
    )
    .await?;
    Ok(match block {
        // The turn ends with an assistant message, whatever role the hook gave it.
        Some(message @ Message::Assistant { .. }) => Prefiltered::Block(message),
        Some(other) => Prefiltered::Block(Message::assistant(other.text())),
        None => Prefiltered::Send(ctx.messages),
    })
}

/// A model reply: the assistant message, with its text and tool calls at hand.
pub(crate) struct Reply {
    pub(crate) message: Message,
    pub(crate) text: Text,
    pub(crate) tool_calls: Arc<[ToolCall]>,
}

/// post_process_message: the reply to store; its text and tool calls become the step's. A
/// replacement that is not an assistant message is refused (logged) and the chain keeps the
/// last good one.
/// A fail-closed hook that fails returns its error with the last good reply. Called only when
/// there are such hooks.
pub(crate) async fn post_process(
    hooks: &TurnHooks,
    agent: &Arc<RunAgent>,
    step: usize,
    reply: Reply,
) -> Result<Reply, (TurnError, Reply)> {
    let mut ctx = PostProcessContext {
        agent: agent.clone(),
        request_id: agent.request_id.clone(),
        step,
        message: reply.message,
    };
    let chained = chain(&hooks.post_process_message, &mut ctx, |ctx, out| {
        match out {
            Some(message @ Message::Assistant { .. }) => ctx.message = message,
            Some(_) => tracing::warn!(
                hook.event = "post_process_message",
                "hook returned a message that is not an assistant message; kept the last good one"
            ),
            None => {}
        }
        true
    })
    .await;
    let (text, tool_calls) = match &ctx.message {
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => (content.clone(), tool_calls.clone()),
        _ => (reply.text, reply.tool_calls),
    };
    let reply = Reply {
        message: ctx.message,
        text,
        tool_calls,
    };
    match chained {
        Ok(()) => Ok(reply),
        Err(error) => Err((error, reply)),
    }
}

/// The tool message that stores `record`.
pub(crate) fn tool_message(record: &ToolResultRecord) -> Message {
    Message::Tool {
        call_id: record.call_id.clone(),
        name: record.name.clone(),
        content: record.content.clone(),
        is_error: record.is_error,
    }
}

/// before_store_tool_result: the tool message to store for `record` (`message` as the hooks
/// leave it), `record` updated to what the model will read. A replacement must answer the same
/// call (so the call stays paired); any other is refused (logged) and the last good one kept.
/// Called only when there are such hooks: without one, `message` is stored as it is and no
/// future is made for each call (the slope of `whole_turn_calls_agent` in
/// agent-providers/benches/stream.rs).
pub(crate) async fn tool_result(
    hooks: &TurnHooks,
    agent: &Arc<RunAgent>,
    step: usize,
    record: &mut ToolResultRecord,
    message: Message,
) -> Result<Message, TurnError> {
    let call = record.call_id.clone();
    let mut ctx = StoreToolResultContext {
        agent: agent.clone(),
        request_id: agent.request_id.clone(),
        step,
        message,
    };
    chain(&hooks.before_store_tool_result, &mut ctx, |ctx, out| {
        match out {
            Some(message @ Message::Tool { .. })
                if matches!(&message, Message::Tool { call_id, .. } if *call_id == call) =>
            {
                ctx.message = message
            }
            Some(_) => tracing::warn!(
                hook.event = "before_store_tool_result",
                "hook returned a message that does not answer call `{call}`; kept the last good one"
            ),
            None => {}
        }
        true
    })
    .await?;
    if let Message::Tool {
        content, is_error, ..
    } = &ctx.message
    {
        record.content.clone_from(content);
        record.is_error = *is_error;
    }
    Ok(ctx.message)
}

/// The assistant message without the dropped tool calls (by position in its calls), and whether nothing the model should
/// see is left of it (no text and no calls: the row is then marked silent).
fn without_calls(message: &Message, dropped: &HashSet<usize>) -> (Message, bool) {
    match message {
        Message::Assistant {
            content,
            reasoning,
            tool_calls,
            reasoning_signature,
            provider_blocks,
        } => {
            let kept: Vec<_> = tool_calls
                .iter()
                .enumerate()
                .filter(|(position, _)| !dropped.contains(position))
                .map(|(_, call)| call.clone())
                .collect();
            let empty = content.is_empty() && kept.is_empty() && provider_blocks.is_empty();
            let message = Message::Assistant {
                content: content.clone(),
                reasoning: reasoning.clone(),
                tool_calls: message::shared_calls(kept),
                reasoning_signature: reasoning_signature.clone(),
                provider_blocks: provider_blocks.clone(),
            };
            (message, empty)
        }
        other => (other.clone(), false),
    }
}

impl Turn<'_> {
    /// prefilter_llm_history blocked the model call: the turn ends, completed, with this
    /// assistant message stored as its answer.
    pub(super) async fn blocked(&mut self, message: Message) -> End {
        self.outcome.text = match &message {
            Message::Assistant { content, .. } => content.clone(),
            other => other.text().into(),
        };
        match self.add(message).await {
            Ok(_) => End::Completed(StopReason::Finished),
            Err(end) => end,
        }
    }

    /// Takes the dropped calls out of the step's assistant message (row `row`, at `at.0` in the
    /// turn's added messages and `at.1` in `messages`): the row is updated, and marked silent
    /// when neither text nor calls are left, so every remaining call stays paired with its
    /// result in what the model reads next.
    pub(super) async fn drop_calls(
        &mut self,
        row: i64,
        at: (usize, usize),
        dropped: &HashSet<usize>,
        messages: &mut Vec<Message>,
    ) -> Result<(), End> {
        let Some(assistant) = messages.get(at.1) else {
            return Ok(());
        };
        let (kept, silent) = without_calls(assistant, dropped);
        let update = MessageUpdate {
            message: Some(kept.clone()),
            silent: silent.then_some(true),
            ..MessageUpdate::default()
        };
        let (written, stored, flow) = self.update_tracked(row, update).await;
        if written {
            for &position in dropped {
                self.open.answered(position);
            }
        }
        flow?;
        let kept = as_stored(kept, stored);
        let added = &mut self.outcome.added;
        if silent {
            messages.remove(at.1);
            if at.0 < added.len() {
                added.remove(at.0);
            }
        } else {
            if let Some(slot) = added.get_mut(at.0) {
                *slot = kept.clone();
            }
            if let Some(slot) = messages.get_mut(at.1) {
                *slot = kept;
            }
        }
        Ok(())
    }
}
