//! Awaiting one of the engine's futures inside its tracing span.

/// Awaits `$future` inside `$span`; when no subscriber records the span (it is disabled),
/// awaits it in place. Wrapped in `Instrumented`, the future is moved into the wrapper, a copy
/// of it whole (kilobytes for a step's) for nothing when there is nothing to record
/// (`whole_turn_agent` in agent-providers/benches/stream.rs). A macro, not a function, for the
/// same reason: a function would take the future as an argument, moving it.
macro_rules! in_span {
    ($span:expr, $future:expr) => {
        // The span is looked at in `recording`, never borrowed here: a local borrowed in an
        // async fn keeps its room in the future across every later await.
        match $crate::engine::traced::recording($span) {
            None => $future.await,
            Some(span) => tracing::Instrument::instrument($future, span).await,
        }
    };
}

pub(super) use in_span;

/// `span`, unless no subscriber records it.
pub(super) fn recording(span: tracing::Span) -> Option<tracing::Span> {
    (!span.is_disabled()).then_some(span)
}
