use agent_core::agent;

#[derive(serde::Serialize, serde::Deserialize)]
struct Invoice {
    total_cents: u64,
}

/// Reads invoices.
#[agent(output = Invoice)]
impl Clerk {}

struct Clerk;

fn main() {}
