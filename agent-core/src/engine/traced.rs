//! Awaiting one of the engine's futures inside its tracing span.

/// Awaits `$future` inside `$span`; when no subscriber records the span (it is disabled),
/// awaits it in place. Wrapped in `Instrumented`, the future is moved into the wrapper, a copy
/// of it whole (kilobytes for a step's) for nothing when there is nothing to record
/// (`whole_turn_agent` in agent-providers/benches/stream.rs). A macro, not a function, for the
/// same reason: a function would take the future as an argument, moving it.
macro_rules! in_span {
    ($span:expr, $future:expr) => {{
        let span: tracing::Span = $span;
        if span.is_disabled() {
            $future.await
        } else {
            tracing::Instrument::instrument($future, span).await
        }
    }};
}

pub(super) use in_span;
