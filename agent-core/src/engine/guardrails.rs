//! Guardrails: checks on the user's input (before the first model call) and on the final
//! output (before it is stored, streamed or reported), each passing or tripping with a reason;
//! a trip ends the turn with [`TurnErrorKind::Guardrail`].

use std::fmt;
use std::sync::Arc;

use crate::cancel::CancelToken;
use crate::hooks::{GuardrailKind, TurnError, TurnErrorKind};
use crate::util::{BoxFuture, catch_panic, catch_unwind, join_ordered};

/// What a guardrail says of a text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GuardrailVerdict {
    /// The text may go on.
    Pass,
    /// The text must not go on, for this reason.
    Trip(String),
}

impl GuardrailVerdict {
    /// Trips with a reason.
    pub fn trip(reason: impl Into<String>) -> Self {
        GuardrailVerdict::Trip(reason.into())
    }
}

type Check = Arc<dyn Fn(String) -> BoxFuture<'static, GuardrailVerdict> + Send + Sync>;

/// A named check on a turn's input or final output, given to
/// [`AgentBuilder::input_guardrail`](crate::AgentBuilder::input_guardrail) or
/// [`AgentBuilder::output_guardrail`](crate::AgentBuilder::output_guardrail). Guardrails of
/// one kind run in the order they were added, each after the one before passed, except those
/// marked [`parallel`](Self::parallel), which run all at once, first. A panicking guardrail
/// trips.
#[derive(Clone)]
pub struct Guardrail {
    pub(crate) name: Arc<str>,
    check: Check,
    pub(crate) parallel: bool,
}

impl fmt::Debug for Guardrail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guardrail")
            .field("name", &self.name)
            .field("parallel", &self.parallel)
            .finish()
    }
}

impl Guardrail {
    /// A guardrail whose check is a plain function of the text.
    pub fn new(
        name: impl Into<String>,
        check: impl Fn(&str) -> GuardrailVerdict + Send + Sync + 'static,
    ) -> Guardrail {
        let check = Arc::new(check);
        Guardrail::new_async(name, move |text: String| {
            let check = check.clone();
            async move { check(&text) }
        })
    }

    /// A guardrail whose check is async (a moderation API call, say).
    pub fn new_async<F>(
        name: impl Into<String>,
        check: impl Fn(String) -> F + Send + Sync + 'static,
    ) -> Guardrail
    where
        F: Future<Output = GuardrailVerdict> + Send + 'static,
    {
        Guardrail {
            name: Arc::from(name.into()),
            check: Arc::new(move |text| Box::pin(check(text))),
            parallel: false,
        }
    }

    /// Runs this guardrail at the same time as the other parallel ones of its kind, before
    /// those in order.
    pub fn parallel(mut self) -> Guardrail {
        self.parallel = true;
        self
    }

    /// Runs the check, a panic tripping.
    async fn verdict(&self, text: &str) -> GuardrailVerdict {
        let check = &self.check;
        match catch_panic(|| check(text.to_owned())) {
            Ok(future) => catch_unwind(future)
                .await
                .unwrap_or_else(|panic| GuardrailVerdict::Trip(format!("it panicked: {panic}"))),
            Err(panic) => GuardrailVerdict::Trip(format!("it panicked: {panic}")),
        }
    }
}

/// Runs `guardrails` of `kind` on `text`: the parallel ones at once, then the others in
/// order. The first trip (in the order they were added, among the parallel ones) ends the turn.
pub(super) async fn check(
    guardrails: &[Guardrail],
    kind: GuardrailKind,
    text: &str,
    cancel: &CancelToken,
) -> Result<(), TurnError> {
    // A cancel stops the checks at once, as it stops an async hook: the turn then ends
    // aborted, and what was checked is neither stored nor shown.
    cancel
        .unless(check_all(guardrails, kind, text))
        .await
        .unwrap_or_else(|| {
            Err(TurnError::new(
                TurnErrorKind::Guardrail {
                    kind,
                    name: String::new(),
                },
                format!("the {kind} guardrails were stopped: the turn was cancelled"),
            ))
        })
}

async fn check_all(
    guardrails: &[Guardrail],
    kind: GuardrailKind,
    text: &str,
) -> Result<(), TurnError> {
    let (parallel, ordered): (Vec<&Guardrail>, Vec<&Guardrail>) =
        guardrails.iter().partition(|g| g.parallel);
    let at_once = parallel
        .iter()
        .map(|guardrail| Box::pin(guardrail.verdict(text)) as BoxFuture<'_, GuardrailVerdict>)
        .collect();
    let verdicts = join_ordered(at_once, parallel.len().max(1)).await;
    for (guardrail, verdict) in parallel.iter().zip(verdicts) {
        tripped(guardrail, kind, verdict)?;
    }
    for guardrail in ordered {
        tripped(guardrail, kind, guardrail.verdict(text).await)?;
    }
    Ok(())
}

fn tripped(
    guardrail: &Guardrail,
    kind: GuardrailKind,
    verdict: GuardrailVerdict,
) -> Result<(), TurnError> {
    match verdict {
        GuardrailVerdict::Pass => Ok(()),
        GuardrailVerdict::Trip(reason) => Err(TurnError::new(
            TurnErrorKind::Guardrail {
                kind,
                name: guardrail.name.to_string(),
            },
            format!("{kind} guardrail `{}` tripped: {reason}", guardrail.name),
        )),
    }
}
