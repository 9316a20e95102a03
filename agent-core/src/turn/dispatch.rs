//! Runs every hook of one turn-wide event in order, applying each hook's failure policy.

use tracing::Instrument;

use crate::hooks::{
    FailurePolicy, Hook, HookFailure, TurnError, TurnErrorKind, TurnEvent, run_hook,
};

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
            Err(failure) => failed(hook, failure)?,
        }
    }
    Ok(())
}

/// Runs transform hooks in order: each reads `ctx` as the previous one left it, and `apply`
/// folds a hook's output into `ctx` (returning `false` stops the chain). A failing hook leaves
/// `ctx` as it was, so the chain goes on with the last good value; only a hook whose `on_error`
/// says fail closed stops it with the turn error it causes.
pub(crate) async fn chain<E: TurnEvent>(
    hooks: &[Hook<E>],
    ctx: &mut E::Ctx,
    mut apply: impl FnMut(&mut E::Ctx, E::Out) -> bool,
) -> Result<(), TurnError> {
    for hook in hooks {
        let span = tracing::debug_span!("hook", otel.name = E::NAME, hook.event = E::NAME, hook.name = %hook.name);
        match run_hook(hook, ctx).instrument(span).await {
            Ok(out) => {
                if !apply(ctx, out) {
                    break;
                }
            }
            Err(failure) => failed(hook, failure)?,
        }
    }
    Ok(())
}

/// Applies `hook`'s failure policy to its failure: logged, and a turn error when it fails closed.
fn failed<E: TurnEvent>(hook: &Hook<E>, failure: HookFailure) -> Result<(), TurnError> {
    match hook.policy() {
        FailurePolicy::FailOpen => {
            tracing::warn!(hook.event = E::NAME, hook.name = %hook.name, "hook failed (fail open): {failure}");
            Ok(())
        }
        FailurePolicy::FailClosed => {
            tracing::warn!(hook.event = E::NAME, hook.name = %hook.name, "hook failed (fail closed): {failure}");
            let message = format!("{} hook `{}` {failure}", E::NAME, hook.name);
            Err(TurnError::new(
                TurnErrorKind::Hook {
                    event: E::NAME,
                    hook: hook.name.clone(),
                },
                message,
            ))
        }
    }
}

/// Runs observer hooks (they return nothing).
pub(crate) async fn observe<E: TurnEvent<Out = ()>>(
    hooks: &[Hook<E>],
    ctx: &E::Ctx,
) -> Result<(), TurnError> {
    each(hooks, ctx, |()| {}).await
}
