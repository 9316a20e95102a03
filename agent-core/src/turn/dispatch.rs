//! Runs every hook of one turn-wide event in order, applying each hook's failure policy.

use tracing::Instrument;

use crate::hooks::{FailurePolicy, Hook, TurnError, TurnErrorKind, TurnEvent, run_hook};

/// Runs `hooks` in order, handing each result to `take`. A failing fail-open hook is logged and
/// skipped; a failing fail-closed hook stops the chain with the turn error it causes.
pub(crate) async fn each<E: TurnEvent>(
    hooks: &[Hook<E>],
    ctx: &E::Ctx,
    mut take: impl FnMut(E::Out),
) -> Result<(), TurnError> {
    for hook in hooks {
        let span = tracing::debug_span!("hook", otel.name = E::NAME, hook.event = E::NAME, hook.name = %hook.name);
        match run_hook(hook, ctx).instrument(span).await {
            Ok(out) => take(out),
            Err(failure) => match hook.policy() {
                FailurePolicy::FailOpen => {
                    tracing::warn!(hook.event = E::NAME, hook.name = %hook.name, "hook failed (fail open): {failure}");
                }
                FailurePolicy::FailClosed => {
                    tracing::warn!(hook.event = E::NAME, hook.name = %hook.name, "hook failed (fail closed): {failure}");
                    let message = format!("{} hook `{}` {failure}", E::NAME, hook.name);
                    return Err(TurnError::new(
                        TurnErrorKind::Hook {
                            event: E::NAME,
                            hook: hook.name.clone(),
                        },
                        message,
                    ));
                }
            },
        }
    }
    Ok(())
}

/// Runs observer hooks (they return nothing).
pub(crate) async fn observe<E: TurnEvent<Out = ()>>(
    hooks: &[Hook<E>],
    ctx: &E::Ctx,
) -> Result<(), TurnError> {
    each(hooks, ctx, |()| {}).await
}
