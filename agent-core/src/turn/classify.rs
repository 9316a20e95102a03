//! The default classifier for errors that end a turn.

use crate::hooks::{ChatErrorClassification, TurnError, TurnErrorKind};
use crate::model::ModelErrorKind;

/// Phrases providers use when the input is longer than the model's context window
/// (OpenAI, Anthropic, Google Gemini, AWS Bedrock and OpenAI-compatible servers).
const CONTEXT_OVERFLOW: &[&str] = &[
    // OpenAI: code `context_length_exceeded`, "This model's maximum context length is N tokens".
    "context_length_exceeded",
    "maximum context length",
    // Anthropic: "prompt is too long: N tokens > M maximum", "input length and `max_tokens` exceed context limit".
    "prompt is too long",
    "exceed context limit",
    // Google Gemini: "The input token count (N) exceeds the maximum number of tokens allowed (M)".
    "input token count",
    "exceeds the maximum number of tokens",
    // AWS Bedrock: "Input is too long for requested model", "too many input tokens".
    "input is too long",
    "too many input tokens",
    // Generic wordings (vLLM, llama.cpp, Ollama, OpenRouter).
    "context window",
    "context length",
    "exceeds the context",
];

/// Classifies an error the way Think's `defaultContextOverflowClassifier` does, and a little more:
/// provider context-overflow messages are `ContextOverflow`, rate limits `RateLimit`, broken
/// streams, timeouts, server errors and transport failures `Transient`, authentication and bad
/// requests `Fatal`; everything else is `Unknown`.
pub fn default_classifier(error: &TurnError) -> ChatErrorClassification {
    let message = error.message.to_ascii_lowercase();
    if CONTEXT_OVERFLOW
        .iter()
        .any(|phrase| message.contains(phrase))
    {
        return ChatErrorClassification::ContextOverflow;
    }
    if message.contains("rate limit") || message.contains("rate_limit") || message.contains("429") {
        return ChatErrorClassification::RateLimit;
    }
    match error.kind {
        TurnErrorKind::Model(ModelErrorKind::ContextOverflow) => {
            ChatErrorClassification::ContextOverflow
        }
        TurnErrorKind::Model(
            ModelErrorKind::Transport
            | ModelErrorKind::StreamTruncated
            | ModelErrorKind::StreamMalformed,
        ) => ChatErrorClassification::Transient,
        _ => ChatErrorClassification::Unknown,
    }
}

/// Whether a provider's error text says the input is longer than the model's context window
/// (the wordings of OpenAI, Anthropic, Google, Bedrock and OpenAI-compatible servers).
pub fn is_context_overflow(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    CONTEXT_OVERFLOW
        .iter()
        .any(|phrase| message.contains(phrase))
}
