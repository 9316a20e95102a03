//! The hook events `#[hook]` knows, with their marker types and context types.

/// One event.
pub(crate) struct EventInfo {
    /// The snake-case name written in `#[hook(...)]`.
    pub(crate) name: &'static str,
    /// The marker type in `agent_core::event`.
    pub(crate) marker: &'static str,
    /// The context type the hook borrows.
    pub(crate) context: &'static str,
    /// Whether it is a tool-call event (takes matchers and typed inputs).
    pub(crate) tool: bool,
}

const fn event(
    name: &'static str,
    marker: &'static str,
    context: &'static str,
    tool: bool,
) -> EventInfo {
    EventInfo {
        name,
        marker,
        context,
        tool,
    }
}

pub(crate) const EVENTS: &[EventInfo] = &[
    event("before_run", "BeforeRun", "RunContext", false),
    event("before_turn", "BeforeTurn", "TurnContext", false),
    event("before_step", "BeforeStep", "StepContext", false),
    event("on_llm_start", "OnLlmStart", "LlmStartContext", false),
    event("on_llm_end", "OnLlmEnd", "LlmEndContext", false),
    event("on_chunk", "OnChunk", "ChunkContext", false),
    event(
        "before_tool_call",
        "BeforeToolCall",
        "ToolCallContext<I>",
        true,
    ),
    event(
        "after_tool_call",
        "AfterToolCall",
        "ToolCallResultContext<I, O>",
        true,
    ),
    event("on_step_finish", "OnStepFinish", "StepRecord", false),
    event("on_stop", "OnStop", "StopContext", false),
    event("after_run", "AfterRun", "TurnResult", false),
    event("on_chat_response", "OnChatResponse", "ChatResponse", false),
    event("on_chat_error", "OnChatError", "ChatErrorContext", false),
    event(
        "classify_chat_error",
        "ClassifyChatError",
        "ClassifyContext",
        false,
    ),
    event(
        "on_session_start",
        "OnSessionStart",
        "SessionStartContext",
        false,
    ),
    event("on_session_end", "OnSessionEnd", "SessionEndContext", false),
    event(
        "filter_messages",
        "FilterMessages",
        "FilterMessagesContext",
        false,
    ),
    event(
        "prefilter_llm_history",
        "PrefilterLlmHistory",
        "LlmHistoryContext",
        false,
    ),
    event(
        "post_process_message",
        "PostProcessMessage",
        "PostProcessContext",
        false,
    ),
    event(
        "before_create_message",
        "BeforeCreateMessage",
        "CreateMessageContext",
        false,
    ),
    event(
        "after_create_message",
        "AfterCreateMessage",
        "MessageCreatedContext",
        false,
    ),
    event(
        "before_update_message",
        "BeforeUpdateMessage",
        "UpdateMessageContext",
        false,
    ),
    event(
        "after_update_message",
        "AfterUpdateMessage",
        "UpdateMessageContext",
        false,
    ),
    event(
        "after_tool_call_success",
        "AfterToolCallSuccess",
        "ToolResultContext",
        false,
    ),
    event(
        "after_tool_call_failure",
        "AfterToolCallFailure",
        "ToolResultContext",
        false,
    ),
    event(
        "before_store_tool_result",
        "BeforeStoreToolResult",
        "StoreToolResultContext",
        false,
    ),
    event("before_handoff", "BeforeHandoff", "HandoffContext", false),
    event(
        "on_subagent_start",
        "OnSubagentStart",
        "SubagentStartContext",
        false,
    ),
    event(
        "on_subagent_stop",
        "OnSubagentStop",
        "SubagentStopContext",
        false,
    ),
    event(
        "validate_output",
        "ValidateOutput",
        "OutputContext<T>",
        false,
    ),
];

/// The event with this name.
pub(crate) fn find(name: &str) -> Option<&'static EventInfo> {
    EVENTS.iter().find(|event| event.name == name)
}

/// Every event's name, for "expected one of" messages.
pub(crate) fn names() -> String {
    EVENTS
        .iter()
        .map(|event| format!("`{}`", event.name))
        .collect::<Vec<_>>()
        .join(", ")
}
