use agent_core::agent;

/// Reads invoices.
#[agent(output_retries = 2)]
impl Clerk {}

struct Clerk;

fn main() {}
