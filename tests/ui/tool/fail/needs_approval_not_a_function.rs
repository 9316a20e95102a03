use agent_core::tool;

/// Transfers money.
#[tool(needs_approval = 3)]
fn transfer(amount: u32) -> String {
    format!("sent {amount}")
}

fn main() {
    let _ = transfer_tool::Transfer;
}
