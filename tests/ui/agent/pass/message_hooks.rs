//! The message hooks inside an `#[agent]` impl: transforms returning their value, an `Option`,
//! a decision or a `Result`, and observers, sync and async.

use agent_core::{
    agent, AgentSpec, CreateMessageContext, FilterMessagesContext, HistoryDecision, HookError,
    LlmHistoryContext, Message, MessageCreatedContext, NewMessage, PostProcessContext,
    ScriptedModel, SessionEndContext, SessionStartContext, StoreToolResultContext, StoredMessage,
    ToolResultContext, ToolResultDecision, UpdateMessageContext, MessageUpdate,
};

struct Notes;

#[agent(instructions = "Take notes.")]
impl Notes {
    /// Adds two integers.
    #[tool]
    fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }

    #[hook(on_session_start)]
    fn opened(&self, ctx: &SessionStartContext) {
        let _ = &ctx.session_id;
    }

    #[hook(on_session_end, priority = 1)]
    async fn closed(&self, ctx: &SessionEndContext) {
        let _ = ctx.status;
    }

    #[hook(filter_messages)]
    fn recent(&self, ctx: &FilterMessagesContext) -> Vec<StoredMessage> {
        ctx.rows.iter().rev().take(20).rev().cloned().collect()
    }

    #[hook(prefilter_llm_history, timeout_ms = 100)]
    async fn guard(&self, ctx: &LlmHistoryContext) -> Result<HistoryDecision, HookError> {
        Ok(if ctx.messages.is_empty() {
            HistoryDecision::Block(Message::assistant("Nothing to do."))
        } else {
            HistoryDecision::Keep
        })
    }

    #[hook(post_process_message)]
    fn trim(&self, ctx: &PostProcessContext) -> Option<Message> {
        let text = ctx.message.text();
        (text.ends_with(' ')).then(|| Message::assistant(text.trim_end()))
    }

    #[hook(before_create_message)]
    fn visible(&self, ctx: &CreateMessageContext) -> NewMessage {
        let mut row = ctx.row.clone();
        row.silent = false;
        row
    }

    #[hook(after_create_message)]
    fn created(&self, ctx: &MessageCreatedContext) {
        let _ = ctx.row.id;
    }

    #[hook(before_update_message)]
    fn keep_update(&self, ctx: &UpdateMessageContext) -> Option<MessageUpdate> {
        let _ = ctx.id;
        None
    }

    #[hook(after_update_message)]
    fn updated(&self, ctx: &UpdateMessageContext) {
        let _ = &ctx.update;
    }

    #[hook(after_tool_call_success)]
    fn tag(&self, ctx: &ToolResultContext) -> ToolResultDecision {
        ToolResultDecision::Replace {
            content: format!("[{}] {}", ctx.call.name, ctx.content),
            is_error: false,
        }
    }

    #[hook(after_tool_call_failure)]
    fn forget(&self, _ctx: &ToolResultContext) -> ToolResultDecision {
        ToolResultDecision::Drop
    }

    #[hook(before_store_tool_result)]
    fn stored(&self, ctx: &StoreToolResultContext) -> Option<Message> {
        let _ = &ctx.message;
        None
    }
}

fn main() {
    let built = Notes.builder().model(ScriptedModel::new([])).build();
    assert!(built.is_ok());
}
