//! A run's limits across every agent it reaches: the number of model calls
//! (`TurnRequest::max_turns`) and a token or cost budget (`TurnRequest::budget`, with a
//! [`PriceTable`]). Subagents' turns count against their caller's run.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::hooks::StopReason;
use crate::model::Usage;

tokio::task_local! {
    /// The calling turn's limits while its step's tools run: a subagent's turn shares them.
    static CALLER: Option<Arc<RunLimits>>;
}

/// What one model costs, in dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Price {
    /// Per million input tokens.
    pub input: f64,
    /// Per million output tokens.
    pub output: f64,
}

/// Prices by model id, for a cost budget.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PriceTable {
    prices: HashMap<String, Price>,
}

impl PriceTable {
    /// No prices.
    pub fn new() -> PriceTable {
        PriceTable::default()
    }

    /// Prices `model` (its id, as the model reports it) at `input` and `output` dollars per
    /// million tokens.
    pub fn price(mut self, model: impl Into<String>, input: f64, output: f64) -> PriceTable {
        self.prices.insert(model.into(), Price { input, output });
        self
    }

    /// What `usage` on `model` costs, when the model is priced.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        let price = self.prices.get(model)?;
        Some(
            (usage.input_tokens as f64 * price.input + usage.output_tokens as f64 * price.output)
                / 1_000_000.0,
        )
    }
}

/// A run's budget: a number of tokens (input plus output), a cost, or both. Checked after
/// every model call of the run; the first call that ends past it ends the run (on_stop
/// fires with `max_budget`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Budget {
    tokens: Option<u64>,
    cost: Option<(f64, PriceTable)>,
}

impl Budget {
    /// At most this many tokens, input plus output, over the whole run.
    pub fn tokens(tokens: u64) -> Budget {
        Budget {
            tokens: Some(tokens),
            cost: None,
        }
    }

    /// At most this many dollars over the whole run, priced by `prices`. A model call on a
    /// model the table does not price ends the run too: an unpriced call cannot be counted.
    /// So does the first call when the budget or the call's price is not a number (NaN),
    /// which no cost can be compared with.
    pub fn cost(dollars: f64, prices: PriceTable) -> Budget {
        Budget {
            tokens: None,
            cost: Some((dollars, prices)),
        }
    }

    /// This budget with a token limit as well.
    pub fn and_tokens(mut self, tokens: u64) -> Budget {
        self.tokens = Some(tokens);
        self
    }
}

/// The limits of one run and what it has used, shared by its agents' turns.
#[derive(Debug)]
pub(crate) struct RunLimits {
    max_turns: Option<usize>,
    budget: Option<Budget>,
    used: Mutex<Used>,
}

#[derive(Debug, Default)]
struct Used {
    model_calls: usize,
    usage: Usage,
    cost: f64,
    /// A model the price table does not price was called.
    unpriced: Option<String>,
}

impl RunLimits {
    /// The limits of a turn: its request's, else (a subagent's turn) its caller's run's.
    pub(crate) fn new(max_turns: Option<usize>, budget: Option<Budget>) -> Option<Arc<RunLimits>> {
        if max_turns.is_none() && budget.is_none() {
            return CALLER.try_with(Clone::clone).ok().flatten();
        }
        Some(Arc::new(RunLimits {
            max_turns,
            budget,
            used: Mutex::default(),
        }))
    }

    fn used(&self) -> std::sync::MutexGuard<'_, Used> {
        self.used.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a model call on `model` and its usage.
    pub(crate) fn count(&self, model: &str, usage: &Usage) {
        let mut used = self.used();
        used.model_calls += 1;
        used.usage.add(usage);
        if let Some((_, prices)) = self.budget.as_ref().and_then(|b| b.cost.as_ref()) {
            match prices.cost(model, usage) {
                Some(cost) => used.cost += cost,
                None => used.unpriced = Some(model.to_owned()),
            }
        }
    }

    /// The limit the run has reached, if any, with what it says.
    pub(crate) fn reached(&self) -> Option<(StopReason, String)> {
        let used = self.used();
        if let Some(max) = self.max_turns
            && used.model_calls >= max
        {
            return Some((
                StopReason::MaxTurns,
                format!("the run reached its limit of {max} model calls"),
            ));
        }
        self.past_budget(&used)
    }

    /// The budget, if the run has gone past it: checked after every model call (the number
    /// of calls is checked before the next one, which it would forbid).
    pub(crate) fn over_budget(&self) -> Option<(StopReason, String)> {
        self.past_budget(&self.used())
    }

    fn past_budget(&self, used: &Used) -> Option<(StopReason, String)> {
        let budget = self.budget.as_ref()?;
        if let Some(max) = budget.tokens
            && used.usage.total_tokens() > max
        {
            return Some((
                StopReason::MaxBudget,
                format!(
                    "the run spent {} tokens, past its budget of {max}",
                    used.usage.total_tokens()
                ),
            ));
        }
        let (max, _) = budget.cost.as_ref()?;
        if let Some(model) = &used.unpriced {
            return Some((
                StopReason::MaxBudget,
                format!(
                    "model `{model}` has no price in the run's price table: its cost cannot be counted against the budget"
                ),
            ));
        }
        // Not `used.cost > *max`: a budget or a price that is not a number (NaN) would then
        // never stop the run; this way it stops it at the first call, naming the NaN.
        let within = used.cost <= *max;
        (!within).then(|| {
            (
                StopReason::MaxBudget,
                format!(
                    "the run spent ${:.4}, past its budget of ${max:.4}",
                    used.cost
                ),
            )
        })
    }

    /// Tokens used by the whole run so far.
    pub(crate) fn usage(&self) -> Usage {
        self.used().usage
    }
}

/// Runs `future` (a step's tool calls) so that a subagent's turn it starts shares `limits`.
/// (A plain function, not twice the size of `future`: see `run_scope::working`.)
pub(crate) fn calling<F: Future>(
    limits: Option<Arc<RunLimits>>,
    future: F,
) -> impl Future<Output = F::Output> {
    CALLER.scope(limits, future)
}
