//! Running one hook under the failure policy: errors, panics and timeouts become a
//! [`HookFailure`]; what the caller does with it depends on the event.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind as catch_sync};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::{Event, Hook, HookBody, HookFailure};
use crate::BoxFuture;

/// Runs a hook, catching panics; async hooks honour their timeout.
pub(crate) async fn run_hook<E: Event>(
    hook: &Hook<E>,
    ctx: &E::Ctx,
) -> Result<E::Out, HookFailure> {
    match &hook.body {
        HookBody::Sync(body) => match catch_sync(AssertUnwindSafe(|| body(ctx))) {
            Ok(result) => result.map_err(|e| HookFailure::Error(e.0)),
            Err(payload) => Err(HookFailure::Panic(panic_message(&*payload))),
        },
        HookBody::Async(body) => {
            let future = match catch_sync(AssertUnwindSafe(|| body(ctx))) {
                Ok(future) => catch_unwind(future),
                Err(payload) => return Err(HookFailure::Panic(panic_message(&*payload))),
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

/// Wraps a boxed future so a panic while polling it becomes an `Err` with the panic message.
pub(crate) fn catch_unwind<T>(future: BoxFuture<'_, T>) -> CatchUnwind<'_, T> {
    CatchUnwind { future }
}

pub(crate) struct CatchUnwind<'a, T> {
    future: BoxFuture<'a, T>,
}

impl<T> Future for CatchUnwind<'_, T> {
    type Output = Result<T, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = &mut self.future;
        match catch_sync(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(panic_message(&*payload))),
        }
    }
}

/// Runs `body`, turning a panic into an `Err` with the panic message.
pub(crate) fn catch_panic<T>(body: impl FnOnce() -> T) -> Result<T, String> {
    catch_sync(AssertUnwindSafe(body)).map_err(|payload| panic_message(&*payload))
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}
