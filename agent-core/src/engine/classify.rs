//! Classifying the error that ends a turn: the classify_chat_error hooks, and the default
//! classifier when none answers.

use std::sync::Arc;

use crate::hooks::{
    ChatErrorClassification, ClassifyContext, ErrorStage, RunAgent, TurnError, TurnErrorKind,
    TurnHooks, every,
};
use crate::model::ModelErrorKind;

/// Classifies a turn's error: the first classify_chat_error answer, else the default classifier.
pub(super) async fn classify(
    hooks: &TurnHooks,
    frame: &Arc<RunAgent>,
    error: &TurnError,
    stage: ErrorStage,
) -> ChatErrorClassification {
    let classify = ClassifyContext {
        agent: frame.clone(),
        request_id: frame.request_id.clone(),
        error: error.clone(),
        stage,
    };
    let mut classification = None;
    let _ = every(&hooks.classify_chat_error, &classify, |c| {
        classification = classification.or(c)
    })
    .await;
    classification.unwrap_or_else(|| default_classifier(error))
}

/// Phrases providers use when the input is longer than the model's context window: every
/// wording of Think's `defaultContextOverflowClassifier` and those of OpenAI, Anthropic, Google
/// Gemini, AWS Bedrock, Mistral and OpenAI-compatible servers.
const CONTEXT_OVERFLOW: &[&str] = &[
    // OpenAI: code `context_length_exceeded`, "This model's maximum context length is N tokens",
    // "Please reduce the length of the messages or completion".
    "context_length_exceeded",
    "context length exceeded",
    "maximum context length",
    "reduce the length of",
    // Anthropic: "prompt is too long: N tokens > M maximum", "input length and `max_tokens`
    // exceed context limit".
    "prompt is too long",
    "exceed context limit",
    // Google Gemini: "The input token count (N) exceeds the maximum number of tokens allowed (M)".
    "input token count",
    "exceeds the maximum number of tokens",
    // AWS Bedrock: "Input is too long for requested model", "too many input tokens".
    "input is too long",
    "too many input tokens",
    // Think, Mistral, Groq and generic wordings (vLLM, llama.cpp, Ollama, OpenRouter, LM Studio).
    "too many tokens",
    "context window",
    "context length",
    "exceeds the context",
    "token limit exceeded",
    "maximum prompt length",
];

/// Phrases of a rate limit. `429` counts only as a whole number, never inside `4290 tokens`.
const RATE_LIMIT: &[&str] = &[
    "rate limit",
    "rate_limit",
    "rate-limit",
    "ratelimit",
    "too many requests",
    // Google: status `RESOURCE_EXHAUSTED`.
    "resource_exhausted",
    "resource exhausted",
];

/// Classifies an error that ended a turn, typed kind first:
///
/// - a model error's kind decides when it is specific: `ContextOverflow` is
///   [`ContextOverflow`](ChatErrorClassification::ContextOverflow), `RateLimited`
///   [`RateLimit`](ChatErrorClassification::RateLimit); `Timeout`, `Server`, `Transport`,
///   `Disconnected` and broken streams
///   [`Transient`](ChatErrorClassification::Transient); `Authentication` and `BadRequest`
///   [`Fatal`](ChatErrorClassification::Fatal), unless the provider's text says the context
///   overflowed (providers report that as a bad request);
/// - a model error of a vaguer kind (`Provider`, `Other`, an error inside the stream) is
///   classified by its text, as Think's `defaultContextOverflowClassifier` does: the
///   context-overflow wordings of every major provider, then rate-limit wordings;
/// - errors that are not the model's (hooks, the store, an on_stop failure, a replaced error)
///   are never read for phrases: a hook error that mentions a "context window" is not an
///   overflow. A busy session is transient, a missing run context and a turn that does not
///   fit the session's suspension fatal; the rest is `Unknown`.
pub fn default_classifier(error: &TurnError) -> ChatErrorClassification {
    use ChatErrorClassification as C;
    match error.kind {
        TurnErrorKind::Model(kind) => match kind {
            ModelErrorKind::ContextOverflow => C::ContextOverflow,
            ModelErrorKind::RateLimited => C::RateLimit,
            ModelErrorKind::Timeout
            | ModelErrorKind::Server
            | ModelErrorKind::Transport
            | ModelErrorKind::Disconnected
            | ModelErrorKind::StreamTruncated
            | ModelErrorKind::StreamMalformed => C::Transient,
            ModelErrorKind::Authentication | ModelErrorKind::BadRequest => {
                if is_context_overflow(&error.message) {
                    C::ContextOverflow
                } else {
                    C::Fatal
                }
            }
            ModelErrorKind::Provider | ModelErrorKind::Other => by_text(&error.message),
        },
        TurnErrorKind::ModelInBand => by_text(&error.message),
        TurnErrorKind::Busy => C::Transient,
        TurnErrorKind::Context | TurnErrorKind::Suspended => C::Fatal,
        TurnErrorKind::Hook { .. }
        | TurnErrorKind::Stopped
        | TurnErrorKind::Limit(_)
        | TurnErrorKind::Guardrail { .. }
        | TurnErrorKind::Store
        | TurnErrorKind::Custom
        | TurnErrorKind::Panicked
        | TurnErrorKind::Output(_) => C::Unknown,
    }
}

/// A model error's classification from its text alone.
fn by_text(message: &str) -> ChatErrorClassification {
    let message = message.to_ascii_lowercase();
    if CONTEXT_OVERFLOW
        .iter()
        .any(|phrase| message.contains(phrase))
    {
        return ChatErrorClassification::ContextOverflow;
    }
    if RATE_LIMIT.iter().any(|phrase| message.contains(phrase)) || has_number(&message, "429") {
        return ChatErrorClassification::RateLimit;
    }
    ChatErrorClassification::Unknown
}

/// Whether `number` stands in `text` as a whole number (no digit right before or after it).
fn has_number(text: &str, number: &str) -> bool {
    text.match_indices(number).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + number.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit()) && !after.is_some_and(|c| c.is_ascii_digit())
    })
}

/// Whether a provider's error text says the input is longer than the model's context window
/// (the wordings of OpenAI, Anthropic, Google, Bedrock and OpenAI-compatible servers).
pub fn is_context_overflow(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    CONTEXT_OVERFLOW
        .iter()
        .any(|phrase| message.contains(phrase))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ChatErrorClassification as C;

    fn model(kind: ModelErrorKind, message: &str) -> TurnError {
        TurnError::new(TurnErrorKind::Model(kind), message)
    }

    fn hook(message: &str) -> TurnError {
        TurnError::new(
            TurnErrorKind::Hook {
                event: "before_step",
                hook: "guard".to_owned(),
            },
            message,
        )
    }

    #[test]
    fn kinds_first_phrases_only_for_model_errors() {
        use ModelErrorKind as K;
        let in_band = |m: &str| TurnError::new(TurnErrorKind::ModelInBand, m);
        let table: Vec<(TurnError, C)> = vec![
            // Typed kinds decide.
            (model(K::ContextOverflow, "anything"), C::ContextOverflow),
            (model(K::RateLimited, "slow down"), C::RateLimit),
            (model(K::Timeout, "no data for 30 s"), C::Transient),
            (model(K::Server, "HTTP 503"), C::Transient),
            (model(K::Transport, "connection refused"), C::Transient),
            (model(K::Disconnected, "connection reset"), C::Transient),
            (model(K::StreamTruncated, "no [DONE]"), C::Transient),
            (model(K::StreamMalformed, "not JSON"), C::Transient),
            (model(K::Authentication, "invalid x-api-key"), C::Fatal),
            (model(K::BadRequest, "unknown field `foo`"), C::Fatal),
            (model(K::BadRequest, "used 4290 tokens"), C::Fatal),
            // A bad request whose text is an overflow is an overflow.
            (
                model(
                    K::BadRequest,
                    "This model's maximum context length is 8192 tokens",
                ),
                C::ContextOverflow,
            ),
            (
                model(
                    K::BadRequest,
                    "prompt is too long: 210000 tokens > 200000 maximum",
                ),
                C::ContextOverflow,
            ),
            // Vague kinds are read: every wording.
            (
                model(K::Provider, "Please reduce the length of the messages."),
                C::ContextOverflow,
            ),
            (
                model(K::Provider, "Too many tokens in the request"),
                C::ContextOverflow,
            ),
            (in_band("too many tokens"), C::ContextOverflow),
            (in_band("context_length_exceeded"), C::ContextOverflow),
            (
                in_band("input length and `max_tokens` exceed context limit"),
                C::ContextOverflow,
            ),
            (
                in_band(
                    "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576)",
                ),
                C::ContextOverflow,
            ),
            (
                in_band("Input is too long for requested model."),
                C::ContextOverflow,
            ),
            (in_band("too many input tokens"), C::ContextOverflow),
            (
                in_band("request exceeds the context window of the model"),
                C::ContextOverflow,
            ),
            (in_band("token limit exceeded"), C::ContextOverflow),
            (
                in_band("the maximum prompt length is 131072"),
                C::ContextOverflow,
            ),
            (
                model(K::Other, "Rate limit reached for gpt-4o"),
                C::RateLimit,
            ),
            (in_band("rate_limit_error"), C::RateLimit),
            (in_band("Too Many Requests"), C::RateLimit),
            (in_band("HTTP 429"), C::RateLimit),
            (in_band("RESOURCE_EXHAUSTED: quota"), C::RateLimit),
            (in_band("context length exceeded"), C::ContextOverflow),
            (in_band("status 429: slow down"), C::RateLimit),
            // Digits inside other numbers are not a status.
            (in_band("the prompt used 4290 tokens"), C::Unknown),
            (in_band("id 14291"), C::Unknown),
            (in_band("Overloaded"), C::Unknown),
            (model(K::Other, "something odd"), C::Unknown),
            // Not the model's errors: never read for phrases.
            (hook("the context window is full of secrets"), C::Unknown),
            (hook("rate limit of my own API"), C::Unknown),
            (
                TurnError::new(TurnErrorKind::Store, "context length column too long"),
                C::Unknown,
            ),
            (
                TurnError::new(TurnErrorKind::Stopped, "too many tokens spent"),
                C::Unknown,
            ),
            (TurnError::new(TurnErrorKind::Custom, "429"), C::Unknown),
            (
                TurnError::new(TurnErrorKind::Busy, "a turn is running"),
                C::Transient,
            ),
        ];
        assert!(table.len() >= 30);
        for (error, expected) in table {
            assert_eq!(default_classifier(&error), expected, "{error:?}");
        }
    }

    #[test]
    fn whole_numbers_only() {
        assert!(has_number("429", "429"));
        assert!(has_number("error 429.", "429"));
        assert!(!has_number("4290", "429"));
        assert!(!has_number("1429", "429"));
        assert!(!has_number("", "429"));
    }
}
