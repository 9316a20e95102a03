use agent_core::{agent, OutputCheck};

struct Invoice {
    total_cents: u64,
}

/// Reads invoices.
#[agent]
impl Clerk {
    #[hook(validate_output)]
    fn non_zero(&self, invoice: &Invoice) -> OutputCheck {
        if invoice.total_cents == 0 {
            OutputCheck::retry("the total cannot be zero")
        } else {
            OutputCheck::Accept
        }
    }
}

struct Clerk;

fn main() {}
