use agent_core::tool;

/// Transfers money.
#[tool(needs_approval = too_much)]
fn transfer(amount: u32) -> String {
    format!("sent {amount}")
}

fn too_much(amount: u32) -> bool {
    amount > 1000
}

fn main() {
    let _ = transfer_tool::Transfer;
}
