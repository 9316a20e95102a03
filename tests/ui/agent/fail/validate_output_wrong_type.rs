use agent_core::{agent, OutputCheck};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema)]
struct Invoice {
    total_cents: u64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Receipt {
    total_cents: u64,
}

/// Reads invoices.
#[agent(output = Invoice)]
impl Clerk {
    #[hook(validate_output)]
    fn non_zero(&self, receipt: &Receipt) -> OutputCheck {
        if receipt.total_cents == 0 {
            OutputCheck::retry("the total cannot be zero")
        } else {
            OutputCheck::Accept
        }
    }
}

struct Clerk;

fn main() {}
