//! Running one hook under the failure policy: errors, panics and timeouts become a
//! [`HookFailure`]; what the caller does with it depends on the event.

use super::{Event, Hook, HookBody, HookFailure};
use crate::util::{catch_panic, catch_unwind};

/// Runs a hook, catching panics; async hooks honour their timeout.
pub(crate) async fn run_hook<E: Event>(
    hook: &Hook<E>,
    ctx: &E::Ctx,
) -> Result<E::Out, HookFailure> {
    match &hook.body {
        HookBody::Sync(body) => match catch_panic(|| body(ctx)) {
            Ok(result) => result.map_err(|e| HookFailure::Error(e.0)),
            Err(panic) => Err(HookFailure::Panic(panic)),
        },
        HookBody::Async(body) => {
            let future = match catch_panic(|| body(ctx)) {
                Ok(future) => catch_unwind(future),
                Err(panic) => return Err(HookFailure::Panic(panic)),
            };
            let result = match hook.options.timeout {
                Some(limit) => match tokio::time::timeout(limit, future).await {
                    Ok(result) => result,
                    Err(_) => return Err(HookFailure::Timeout(limit)),
                },
                None => future.await,
            };
            match result {
                Ok(result) => result.map_err(|e| HookFailure::Error(e.0)),
                Err(panic) => Err(HookFailure::Panic(panic)),
            }
        }
    }
}
